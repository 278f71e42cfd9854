// Table and JSON formatting of perf results.
#include "report.h"

#include <cmath>

namespace sccl_perf {
namespace {

std::string jsonString(const std::string& text) {
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') quoted += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      quoted += escaped;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

std::string jsonNumber(double value, int precision) {
  if (!std::isfinite(value)) return "null";
  char text[64];
  if (precision < 0) {
    std::snprintf(text, sizeof(text), "%.0f", value);
  } else {
    std::snprintf(text, sizeof(text), "%.*g", 10, value);
  }
  return text;
}

void writeObject(FILE* out, const KeyValues& values) {
  std::fprintf(out, "{");
  for (size_t i = 0; i < values.size(); ++i) {
    std::fprintf(out, "%s%s: %s", i ? ", " : "", jsonString(values[i].first).c_str(),
                 jsonString(values[i].second).c_str());
  }
  std::fprintf(out, "}");
}

}  // namespace

void printKeyValues(FILE* out, const KeyValues& values) {
  for (const auto& [key, value] : values)
    std::fprintf(out, "# %s: %s\n", key.c_str(), value.c_str());
}

void ResultTable::printHeader(FILE* out) const {
  std::fprintf(out, "#");
  for (const Column& column : columns_)
    std::fprintf(out, " %*s", column.width, column.title.c_str());
  std::fprintf(out, "\n");
}

void ResultTable::addRow(std::vector<Cell> cells, FILE* out) {
  std::fprintf(out, " ");
  for (size_t i = 0; i < columns_.size() && i < cells.size(); ++i) {
    const Column& column = columns_[i];
    if (cells[i].is_text) {
      std::fprintf(out, " %*s", column.width, cells[i].text.c_str());
    } else if (column.precision < 0) {
      std::fprintf(out, " %*.0f", column.width, cells[i].number);
    } else {
      std::fprintf(out, " %*.*f", column.width, column.precision, cells[i].number);
    }
  }
  std::fprintf(out, "\n");
  std::fflush(out);
  rows_.push_back(std::move(cells));
}

bool ResultTable::writeJson(const std::string& path, const std::string& tool,
                            const KeyValues& machine, const KeyValues& options) const {
  FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) return false;
  std::fprintf(out, "{\"tool\": %s,\n \"machine\": ", jsonString(tool).c_str());
  writeObject(out, machine);
  std::fprintf(out, ",\n \"options\": ");
  writeObject(out, options);
  std::fprintf(out, ",\n \"results\": [");
  for (size_t r = 0; r < rows_.size(); ++r) {
    std::fprintf(out, "%s\n  {", r ? "," : "");
    for (size_t i = 0; i < columns_.size() && i < rows_[r].size(); ++i) {
      const Cell& cell = rows_[r][i];
      std::string value =
          cell.is_text ? jsonString(cell.text) : jsonNumber(cell.number, columns_[i].precision);
      std::fprintf(out, "%s%s: %s", i ? ", " : "", jsonString(columns_[i].json_key).c_str(),
                   value.c_str());
    }
    std::fprintf(out, "}");
  }
  std::fprintf(out, "\n ]}\n");
  return std::fclose(out) == 0;
}

}  // namespace sccl_perf
