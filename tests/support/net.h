// Network stand-ins for tests: a listening TCP socket on a local address.
#pragma once

#include <cstdint>
#include <string>

namespace vigil::support {

// A loopback port that was free a moment ago (bind to 0, read, close);
// type SOCK_STREAM or SOCK_DGRAM.
std::uint16_t free_port(int type);

// A TCP socket listening on addr:port (an IPv4 or IPv6 literal; port 0
// takes a free one), with SO_REUSEADDR so a test can rerun at once. Closed on
// destruction. What is done with the connections is up to the test: accept
// them, or leave them to the kernel's backlog (a server that never answers).
class TcpListener {
 public:
  TcpListener(const std::string& addr, std::uint16_t port, int backlog = 16);
  ~TcpListener();
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;

  bool ok() const { return fd_ >= 0; }
  // Why it is not listening ("" when ok()).
  const std::string& error() const { return error_; }
  int fd() const { return fd_; }
  // The port it listens on (the one the kernel picked for port 0).
  std::uint16_t port() const { return port_; }
  // Shuts the socket down, waking a thread blocked on it; the fd stays open
  // until destruction.
  void shutdown();

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::string error_;
};

}  // namespace vigil::support
