// The set-up record a UCX rank publishes (transports/ucx/ucx_peer_info.h) is checked before use:
// a record too short for its header, of another format, or announcing an address longer than
// the record or than the limit is scclRemoteError naming the rank; a good one round-trips. And
// the liveness check tells this process alive and an exited one dead.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "transports/ucx/ucx_peer_info.h"

using sccl::ucx::PeerInfo;

namespace {

scclResult_t decode(const std::vector<uint8_t>& record, std::vector<uint8_t>* address) {
  PeerInfo info;
  return sccl::ucx::decodePeerRecord(record.data(), record.size(), 3, &info, address);
}

}  // namespace

TEST_CASE("ucx peer records: a good record round-trips", "[ucx][records]") {
  PeerInfo mine = sccl::ucx::describeThisProcess();
  std::vector<uint8_t> address = {1, 2, 3, 4, 5};
  std::vector<uint8_t> record = sccl::ucx::encodePeerRecord(mine, address.data(), address.size());
  record.resize(record.size() + 11, 0);  // padded to the longest record of the job
  PeerInfo got;
  std::vector<uint8_t> got_address;
  REQUIRE(sccl::ucx::decodePeerRecord(record.data(), record.size(), 0, &got, &got_address) ==
          scclSuccess);
  CHECK(got.pid == mine.pid);
  CHECK(got.start_time == mine.start_time);
  CHECK(got.host_key == mine.host_key);
  CHECK(got_address == address);
}

TEST_CASE("ucx peer records: malformed records are remote errors naming the rank",
          "[ucx][records]") {
  PeerInfo mine = sccl::ucx::describeThisProcess();
  std::vector<uint8_t> address(100, 7), out;
  const std::vector<uint8_t> good =
      sccl::ucx::encodePeerRecord(mine, address.data(), address.size());
  const size_t header = sccl::ucx::peerRecordHeaderBytes();

  std::vector<uint8_t> short_record(good.begin(), good.begin() + long(header) - 1);
  CHECK(decode(short_record, &out) == scclRemoteError);
  CHECK_THAT(sccl::threadLastError(), Catch::Contains("rank 3"));

  std::vector<uint8_t> other_format = good;
  other_format[0] ^= 0xff;  // magic
  CHECK(decode(other_format, &out) == scclRemoteError);
  CHECK_THAT(sccl::threadLastError(), Catch::Contains("another format"));

  std::vector<uint8_t> truncated(good.begin(), good.end() - 1);  // address cut short
  CHECK(decode(truncated, &out) == scclRemoteError);
  CHECK_THAT(sccl::threadLastError(), Catch::Contains("worker address"));

  std::vector<uint8_t> huge = good;
  uint64_t announced = uint64_t(1) << 40;
  std::memcpy(huge.data() + header - 8, &announced, 8);  // the address length is the last field
  CHECK(decode(huge, &out) == scclRemoteError);

  std::vector<uint8_t> empty = sccl::ucx::encodePeerRecord(mine, nullptr, 0);
  CHECK(decode(empty, &out) == scclRemoteError);
}

TEST_CASE("ucx peer records: liveness of this process and of an exited one", "[ucx][records]") {
  std::string state;
  CHECK(sccl::ucx::processAlive(sccl::ucx::describeThisProcess(), &state));
  pid_t child = fork();
  if (child == 0) _exit(0);
  REQUIRE(child > 0);
  PeerInfo info = sccl::ucx::describeThisProcess();
  info.pid = child;
  // Exited but not reaped yet: a zombie, or (its start time differs from ours) not the same
  // process; either way dead.
  usleep(20000);
  CHECK_FALSE(sccl::ucx::processAlive(info, &state));
  int status = 0;
  waitpid(child, &status, 0);
  CHECK_FALSE(sccl::ucx::processAlive(info, &state));
  CHECK_THAT(state, Catch::Contains("exited"));
}
