// Output of the perf binaries: a fixed-width table on stdout (header lines start with '#', as in
// nccl-tests) and the same rows as JSON (-J), with the machine description and the options.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace sccl_perf {

struct Column {
  std::string title;     // table heading
  std::string json_key;  // key in the JSON rows
  int width;
  int precision;  // digits after the point for numbers; -1: integer
};

// One value of a row: a number, or text (e.g. "PASS").
struct Cell {
  double number = 0;
  std::string text;
  bool is_text = false;
  Cell(double value) : number(value) {}  // NOLINT: rows are written as brace lists of values
  Cell(const char* value) : text(value), is_text(true) {}             // NOLINT
  Cell(std::string value) : text(std::move(value)), is_text(true) {}  // NOLINT
};

// Ordered key/value pairs (machine, options) for the header and the JSON document.
using KeyValues = std::vector<std::pair<std::string, std::string>>;

class ResultTable {
 public:
  explicit ResultTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

  void printHeader(FILE* out) const;
  // Prints the row at once (so long runs show progress) and keeps it for JSON.
  void addRow(std::vector<Cell> cells, FILE* out);

  // Writes {"tool":..., "machine":{...}, "options":{...}, "results":[{...}, ...]} to path.
  bool writeJson(const std::string& path, const std::string& tool, const KeyValues& machine,
                 const KeyValues& options) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
};

// "# key: value" lines.
void printKeyValues(FILE* out, const KeyValues& values);

}  // namespace sccl_perf
