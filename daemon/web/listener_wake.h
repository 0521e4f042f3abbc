// Stopping the HTTP server quickly. civetweb 1.15's accept loop polls its
// listening sockets with a 2 s timeout and reads its stop flag only between
// polls, so mg_stop took up to 2 s, most of memtrimd's shutdown time. A
// connection to a listening port ends that poll at once.
#pragma once

#include <functional>
#include <vector>

namespace memtrimd {

// Opens and at once closes a connection to each port on 127.0.0.1 and ::1
// (non-blocking: nothing here waits). Ports bound to other addresses only
// are not reached; their stop takes the poll's time, as before.
void PokeListeners(const std::vector<int>& ports);

// Runs `stop` (which stops the server listening on `ports`) while poking
// those ports every 20 ms until it returns.
void StopWithPokes(const std::vector<int>& ports, const std::function<void()>& stop);

}  // namespace memtrimd
