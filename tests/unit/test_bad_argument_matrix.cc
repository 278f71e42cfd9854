// The bad-argument matrix: for every function the public header exports, a
// table of invalid calls, each with the code docs/api.md documents for it. Every case runs on
// both ranks of a 2-rank in-process communicator (an argument rejected on every rank returns at
// once, so no rank waits for a peer), must return its documented code with a non-empty
// scclGetLastError message, and after each function's cases a valid scclAllReduce on the same
// communicator must still give the right sum. A coverage test parses the public header and
// requires every exported function in the table with at least 20 cases (the few exemptions are
// listed with their reason).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/bad_argument_matrix.h"

using namespace sccl_badargs;

namespace {

std::vector<Case> buildMatrix() {
  Matrix m;
  addCommunicatorCases(m);
  addCollectiveCases(m);
  addSelectCases(m);
  addSparseCases(m);
  addEventCases(m);
  addSketchCases(m);
  return m.cases;
}

// Exported functions whose arguments leave fewer than 20 distinct invalid calls.
const std::map<std::string, std::string> kExempt = {
    {"scclGetUniqueId", "one output pointer: NULL is its only invalid value"},
    {"scclGetVersion", "one output pointer: NULL is its only invalid value"},
    {"scclGetErrorString",
     "every value is valid (a static string, never NULL); 6 out-of-range "
     "values checked"},
};

// Every SCCL_API declaration in every public header (sparsecoll.h and the part headers it
// includes).
std::vector<std::string> exportedFunctions() {
  std::string s;
  for (const auto& entry : std::filesystem::directory_iterator(SCCL_PUBLIC_HEADER_DIR)) {
    if (entry.path().extension() != ".h") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    s += text.str();
  }
  std::vector<std::string> names;
  std::regex decl(R"(SCCL_API\s+[^;(]*?\b(sccl\w+)\s*\()");
  for (auto it = std::sregex_iterator(s.begin(), s.end(), decl); it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1]);
  return names;
}

}  // namespace

TEST_CASE("bad argument matrix covers every exported function", "[badargs]") {
  std::vector<std::string> exported = exportedFunctions();
  REQUIRE(exported.size() >= 30);
  std::map<std::string, int> counts;
  for (const Case& c : buildMatrix()) counts[c.fn]++;
  int total = 0;
  for (auto& [fn, n] : counts) total += n;
  std::set<std::string> exportedSet(exported.begin(), exported.end());
  for (auto& [fn, n] : counts) {
    INFO(fn);
    CHECK(exportedSet.count(fn) == 1);  // no case for a function the header does not export
  }
  for (const std::string& fn : exported) {
    WARN(fn << ": " << counts[fn] << " cases"
            << (kExempt.count(fn) ? " (exempt: " + kExempt.at(fn) + ")" : std::string()));
    CHECK(counts[fn] >= 1);
    if (!kExempt.count(fn)) CHECK(counts[fn] >= 20);
  }
  WARN(exported.size() << " exported functions, " << total << " cases, every one run");
}

TEST_CASE("bad argument matrix returns the documented codes and leaves the communicator usable",
          "[badargs]") {
  const std::vector<Case> cases = buildMatrix();
  scclUniqueId ids[4];
  for (scclUniqueId& id : ids) REQUIRE(scclGetUniqueId(&id) == scclSuccess);
  std::vector<sccl_test::RankLog> logs;
  for (int r = 0; r < kRanks; ++r) logs.emplace_back(r);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      sccl_test::RankLog& log = logs[r];
      Ctx c;
      c.rank = r;
      auto ok = [&](scclResult_t res, const char* what) {
        return log.checkResult(res, scclSuccess, what);
      };
      if (!ok(scclCommInitRank(&c.comm, kRanks, ids[0], r), "init comm")) return;
      if (!ok(scclCommInitRank(&c.other, kRanks, ids[1], r), "init other")) return;
      if (!ok(scclCommInitRank(&c.deadComm, kRanks, ids[2], r), "init dead")) return;
      if (!ok(scclCommInitRank(&c.abortedComm, kRanks, ids[3], r), "init aborted")) return;
      if (!ok(scclGetUniqueId(&c.id), "unique id")) return;
      ok(scclSparsifierCreate(&c.sp, c.comm, kCount, scclFloat32, &c.sparseConfig), "sp");
      ok(scclSparsifierCreate(&c.spOther, c.other, kCount, scclFloat32, &c.sparseConfig), "sp2");
      ok(scclSparsifierCreate(&c.deadSp, c.comm, kCount, scclFloat32, &c.sparseConfig), "sp3");
      ok(scclEventCommCreate(&c.ec, c.comm, kCount, scclFloat32, c.tensorSizes, 2, nullptr, 0,
                             nullptr, &c.eventConfig),
         "ec");
      ok(scclEventCommCreate(&c.deadEc, c.comm, kCount, scclFloat32, c.tensorSizes, 2, nullptr, 0,
                             nullptr, &c.eventConfig),
         "ec2");
      ok(scclSparsifierDestroy(c.deadSp), "destroy sp3");
      ok(scclEventCommDestroy(c.deadEc), "destroy ec2");
      ok(scclCommDestroy(c.deadComm), "destroy dead");
      ok(scclCommAbort(c.abortedComm), "abort");
      c.freedHeap = new float[4];
      delete[] c.freedHeap;
      if (!log.failures().empty()) return;

      std::string current;
      auto checkUsable = [&](const std::string& fn) {
        std::vector<float> in(5, float(r + 1)), out(5, 0.0f);
        scclResult_t res =
            scclAllReduce(in.data(), out.data(), 5, scclFloat32, scclSum, c.comm, nullptr);
        log.checkResult(res, scclSuccess, "all-reduce after the " + fn + " cases");
        for (float v : out) log.check(v == 3.0f, "all-reduce sum after the " + fn + " cases");
      };
      for (const Case& k : cases) {
        if (k.fn != current && !current.empty()) checkUsable(current);
        current = k.fn;
        if (std::getenv("SCCL_BADARGS_TRACE") != nullptr)
          std::fprintf(stderr, "rank %d: %s [%s]\n", r, k.fn.c_str(), k.name.c_str());
        scclResult_t got = k.call(c);
        std::string what = k.fn + " [" + k.name + "]";
        log.checkResult(got, k.want, what);
        if (k.want != scclSuccess && got != scclSuccess)
          log.check(std::strlen(scclGetLastError(nullptr)) > 0, what + ": empty last error");
      }
      checkUsable(current);
      ok(scclEventCommDestroy(c.ec), "destroy ec");
      ok(scclSparsifierDestroy(c.sp), "destroy sp");
      ok(scclSparsifierDestroy(c.spOther), "destroy sp2");
      ok(scclCommDestroy(c.other), "destroy other");
      ok(scclCommDestroy(c.comm), "destroy comm");
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> failures;
  for (auto& log : logs)
    failures.insert(failures.end(), log.failures().begin(), log.failures().end());
  WARN(cases.size() << " cases on each of " << kRanks << " ranks, " << failures.size()
                    << " failures");
  REQUIRE_NO_RANK_FAILURES(failures);
}
