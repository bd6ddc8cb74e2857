// A control socket (AF_UNIX stream) served by its own thread, which sleeps in poll() until
// a client connects. One request per connection: the client writes its arguments, each
// ended by a NUL byte, and shuts its side down; the server answers with text whose first
// line is "ok" or "error: ..." and closes. How a request is carried out is the handler's
// business (softibd runs it on the fabric's thread).
#pragma once

#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace softib::softibd {

class ControlSocket {
 public:
  // The whole answer (first line "ok" or "error: ...") for the request's arguments.
  using Handler = std::function<std::string(const std::vector<std::string>& args)>;
  ControlSocket() = default;
  ~ControlSocket() { Stop(); }
  ControlSocket(const ControlSocket&) = delete;
  ControlSocket& operator=(const ControlSocket&) = delete;

  // Listens at `path` (a stale socket file there is replaced) and starts the thread.
  bool Start(const std::string& path, Handler handler, std::string* error);
  // Stops the thread and removes the socket file.
  void Stop();

  // Limits on a request, so a client cannot hold the server or its memory.
  static constexpr std::size_t kMaxRequestBytes = 64 * 1024;
  static constexpr int kIoTimeoutMs = 2000;

 private:
  void Run();
  void Serve(int client);

  std::string path_;
  Handler handler_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd
  std::thread thread_;
};

}  // namespace softib::softibd
