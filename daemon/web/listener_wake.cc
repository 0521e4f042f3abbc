#include "daemon/web/listener_wake.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "collectors/common/unique_fd.h"

namespace memtrimd {
namespace {

void Poke(int family, const sockaddr* addr, socklen_t len) {
  const UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return;
  // EINPROGRESS or a refusal is fine: the SYN is what wakes the poll.
  (void)::connect(fd.get(), addr, len);
}

}  // namespace

void PokeListeners(const std::vector<int>& ports) {
  for (int port : ports) {
    sockaddr_in v4{};
    v4.sin_family = AF_INET;
    v4.sin_port = htons(static_cast<uint16_t>(port));
    v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    Poke(AF_INET, reinterpret_cast<const sockaddr*>(&v4), sizeof(v4));
    sockaddr_in6 v6{};
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(static_cast<uint16_t>(port));
    v6.sin6_addr = in6addr_loopback;
    Poke(AF_INET6, reinterpret_cast<const sockaddr*>(&v6), sizeof(v6));
  }
}

void StopWithPokes(const std::vector<int>& ports, const std::function<void()>& stop) {
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false;
  // A poke that lands before mg_stop has set its flag is served as an empty
  // connection and the loop polls again: hence pokes until stop returns.
  std::thread poker([&] {
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(20), [&] { return stopped; })) {
      PokeListeners(ports);
    }
  });
  stop();
  {
    std::lock_guard<std::mutex> lock(mu);
    stopped = true;
  }
  cv.notify_all();
  poker.join();
}

}  // namespace memtrimd
