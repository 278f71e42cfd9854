// Set-up records of the UCX transport and process liveness (see ucx_peer_info.h).
#include "transports/ucx/ucx_peer_info.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace sccl {
namespace ucx {
namespace {

constexpr uint32_t kRecordMagic = 0x55435852;  // "UCXR"
constexpr uint32_t kRecordVersion = 1;

struct RecordHeader {
  uint32_t magic;
  uint32_t version;
  int32_t pid;
  uint32_t reserved;
  uint64_t start_time;
  uint64_t host_key;
  uint64_t address_bytes;
};

uint64_t fnv1a(const std::string& text, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string readFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// State letter and start time (field 22) of /proc/<pid>/stat; false when it cannot be read.
bool readProcessStat(int32_t pid, char* state, uint64_t* start_time) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  std::string line = readFirstLine(path);
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  if (!(fields >> field) || field.empty()) return false;
  *state = field[0];
  // Fields 4..21 come before the start time (field 22).
  for (int i = 4; i <= 21; ++i) {
    if (!(fields >> field)) return false;
  }
  unsigned long long start = 0;
  if (!(fields >> start)) return false;
  *start_time = start;
  return true;
}

}  // namespace

PeerInfo describeThisProcess() {
  PeerInfo info;
  info.pid = static_cast<int32_t>(getpid());
  char state = 0;
  readProcessStat(info.pid, &state, &info.start_time);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  struct stat pid_ns {};
  std::string ns = stat("/proc/self/ns/pid", &pid_ns) == 0 ? std::to_string(pid_ns.st_ino) : "";
  info.host_key =
      fnv1a(std::string(host) + "|" + readFirstLine("/proc/sys/kernel/random/boot_id") + "|" + ns);
  return info;
}

size_t peerRecordHeaderBytes() {
  return sizeof(RecordHeader);
}

std::vector<uint8_t> encodePeerRecord(const PeerInfo& info, const void* address,
                                      size_t address_bytes) {
  RecordHeader header{kRecordMagic,    kRecordVersion, info.pid,     0,
                      info.start_time, info.host_key,  address_bytes};
  std::vector<uint8_t> record(sizeof(header) + address_bytes);
  std::memcpy(record.data(), &header, sizeof(header));
  if (address_bytes > 0) std::memcpy(record.data() + sizeof(header), address, address_bytes);
  return record;
}

scclResult_t decodePeerRecord(const uint8_t* record, size_t bytes, int rank, PeerInfo* info,
                              std::vector<uint8_t>* address) {
  RecordHeader header{};
  if (bytes < sizeof(header)) {
    return fail(scclRemoteError, "UCX transport: rank %d sent a set-up record of %zu bytes", rank,
                bytes);
  }
  std::memcpy(&header, record, sizeof(header));
  if (header.magic != kRecordMagic || header.version != kRecordVersion) {
    return fail(scclRemoteError,
                "UCX transport: rank %d sent a set-up record of another format (magic 0x%x, "
                "version %u; expected 0x%x, %u)",
                rank, header.magic, header.version, kRecordMagic, kRecordVersion);
  }
  if (header.address_bytes == 0 || header.address_bytes > kMaxAddressBytes ||
      header.address_bytes > bytes - sizeof(header)) {
    return fail(scclRemoteError,
                "UCX transport: rank %d announced a worker address of %llu bytes in a record of "
                "%zu bytes (at most %zu allowed)",
                rank, static_cast<unsigned long long>(header.address_bytes), bytes,
                kMaxAddressBytes);
  }
  info->pid = header.pid;
  info->start_time = header.start_time;
  info->host_key = header.host_key;
  address->assign(record + sizeof(header), record + sizeof(header) + header.address_bytes);
  return scclSuccess;
}

bool processAlive(const PeerInfo& info, std::string* state) {
  char letter = 0;
  uint64_t start_time = 0;
  if (!readProcessStat(info.pid, &letter, &start_time)) {
    *state = "has exited";
    return false;
  }
  if (start_time != info.start_time) {
    *state = "has exited (its pid now belongs to another process)";
    return false;
  }
  if (letter == 'Z' || letter == 'X') {
    *state = "has exited (zombie)";
    return false;
  }
  return true;
}

}  // namespace ucx
}  // namespace sccl
