// A C++ program's allocation site: holder::Pool<int>::grow, a member of a
// class template in a namespace, called by holder::fill, holds 64 MiB of
// malloc'd memory in 1 MiB blocks. Site labels must name both as C++ does,
// without parameter lists ("holder::Pool<int>::grow < holder::fill <
// main"), the profile with theirs.
//   cxx_site_holder TRIGGER
// prints "armed", holds nothing until the file TRIGGER exists, then holds,
// prints "ready" and waits to be killed.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace holder {

template <class T>
struct Pool {
  // noinline: a function of its own in every stack of the site.
  [[gnu::noinline]] void grow(std::size_t bytes) {
    void* p = std::malloc(bytes);
    if (p == nullptr) std::abort();
    std::memset(p, 1, bytes);  // resident, as live memory is
    blocks.push_back(p);
    __asm__ volatile("" ::: "memory");  // the call above stays a call
  }
  std::vector<void*> blocks;
};

[[gnu::noinline]] void fill(Pool<int>& pool, unsigned long mib) {
  for (unsigned long i = 0; i < mib; ++i) pool.grow(1u << 20);
  __asm__ volatile("" ::: "memory");
}

}  // namespace holder

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: cxx_site_holder TRIGGER\n");
    return 2;
  }
  std::printf("armed\n");
  std::fflush(stdout);
  const timespec tick = {0, 10 * 1000 * 1000};
  while (access(argv[1], F_OK) != 0) nanosleep(&tick, nullptr);
  holder::Pool<int> pool;
  pool.blocks.reserve(64);  // the vector's own block before the site's
  holder::fill(pool, 64);
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();
}
