// libFuzzer harness: a rank's bootstrap against a hostile root. A fake root in this process
// (a loopback listener on a helper thread) accepts the rank's connection, reads its hello and
// answers with the fuzz input, byte for byte, then closes. Bootstrap::connect and, when the
// input happens to admit the rank, two all-gather rounds and a barrier must end with a
// documented code (the rank side's frame checks: magic, version, types, sizes before any
// allocation, rounds, RoundError codes) and never crash or hang.
//
// Input: byte 0: nranks (1..3) and this rank;
// the rest is what the root sends. Slower than the pure decoders (a TCP connection per input).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "transports/bootstrap/bootstrap.h"
#include "transports/bootstrap/unique_id.h"

namespace {

class FakeRoot {
 public:
  FakeRoot() {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        listen(listener_, 16) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0)
      std::abort();
    sccl::UniqueIdContents contents;
    contents.port = ntohs(address.sin_port);
    contents.address = {127, 0, 0, 1};
    for (size_t i = 0; i < contents.token.size(); ++i) contents.token[i] = uint8_t(i * 13 + 1);
    sccl::encodeUniqueId(contents, &id_);
    std::thread([this] { serve(); }).detach();
  }

  const scclUniqueId& id() const { return id_; }

  // The reply for the next connection.
  void setReply(const uint8_t* data, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    reply_.assign(data, data + size);
  }

 private:
  void serve() {
    for (;;) {
      int fd = accept(listener_, nullptr, nullptr);
      if (fd < 0) continue;
      std::vector<uint8_t> reply;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        reply = reply_;
      }
      uint8_t hello[48];
      size_t have = 0;
      while (have < sizeof hello) {
        ssize_t got = read(fd, hello + have, sizeof hello - have);
        if (got <= 0) break;
        have += size_t(got);
      }
      size_t sent = 0;
      while (sent < reply.size()) {
        ssize_t put = send(fd, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
        if (put <= 0) break;
        sent += size_t(put);
      }
      // Half-close, then drain until the rank closes: closing with unread data would reset the
      // connection and could discard the reply before the rank reads it.
      shutdown(fd, SHUT_WR);
      uint8_t sink[4096];
      while (read(fd, sink, sizeof sink) > 0) {
      }
      close(fd);
    }
  }

  int listener_ = -1;
  scclUniqueId id_;
  std::mutex mutex_;
  std::vector<uint8_t> reply_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static FakeRoot* root = new FakeRoot();
  if (size < 1) return 0;
  const int nranks = 1 + data[0] % 3;
  const int rank = (data[0] >> 2) % nranks;
  root->setReply(data + 1, size - 1);
  std::unique_ptr<sccl::Bootstrap> bootstrap;
  scclResult_t result = sccl::Bootstrap::connect(root->id(), rank, nranks, 2000, &bootstrap);
  if (result == scclSuccess) {
    uint8_t mine[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    std::vector<uint8_t> all(8 * size_t(nranks));
    for (int round = 0; round < 2 && result == scclSuccess; ++round)
      result = bootstrap->allGather(mine, all.data(), sizeof mine);
    if (result == scclSuccess) result = bootstrap->barrier();
  }
  // Any result code is possible (a RoundError frame forwards the root's failure code), but never
  // scclInProgress nor a value outside the enum.
  if (result != scclSuccess &&
      (int(result) <= 0 || int(result) >= int(scclNumResults) || result == scclInProgress))
    std::abort();
  return 0;
}
