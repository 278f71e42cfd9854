#include "fashion_mnist.h"

#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace eventgrad_example {
namespace {

std::vector<uint8_t> readGzip(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw std::runtime_error("cannot open " + path);
  std::vector<uint8_t> data;
  uint8_t chunk[1 << 16];
  int got = 0;
  while ((got = gzread(file, chunk, sizeof(chunk))) > 0)
    data.insert(data.end(), chunk, chunk + got);
  bool failed = got < 0;
  gzclose(file);
  if (failed) throw std::runtime_error("cannot decompress " + path);
  return data;
}

uint32_t bigEndian(const std::vector<uint8_t>& data, size_t offset) {
  return (uint32_t(data[offset]) << 24) | (uint32_t(data[offset + 1]) << 16) |
         (uint32_t(data[offset + 2]) << 8) | uint32_t(data[offset + 3]);
}

}  // namespace

Dataset loadFashionMnist(const std::string& directory, const std::string& split) {
  const std::string image_path = directory + "/" + split + "-images-idx3-ubyte.gz";
  const std::string label_path = directory + "/" + split + "-labels-idx1-ubyte.gz";
  std::vector<uint8_t> images = readGzip(image_path);
  std::vector<uint8_t> labels = readGzip(label_path);
  if (images.size() < 16 || bigEndian(images, 0) != 0x803)
    throw std::runtime_error(image_path + ": not an IDX image file");
  if (labels.size() < 8 || bigEndian(labels, 0) != 0x801)
    throw std::runtime_error(label_path + ": not an IDX label file");
  const uint32_t n = bigEndian(images, 4), rows = bigEndian(images, 8),
                 cols = bigEndian(images, 12);
  if (rows != 28 || cols != 28 || images.size() != 16 + size_t(n) * 784)
    throw std::runtime_error(image_path + ": unexpected size");
  if (bigEndian(labels, 4) != n || labels.size() != 8 + size_t(n))
    throw std::runtime_error(label_path + ": label count differs from the image count");
  Dataset out;
  out.images = torch::from_blob(images.data() + 16, {int64_t(n), 1, 28, 28}, torch::kUInt8)
                   .to(torch::kFloat32)
                   .div_(255.0);
  // Fashion-MNIST training-set statistics.
  out.images.sub_(0.2860).div_(0.3530);
  out.labels = torch::from_blob(labels.data() + 8, {int64_t(n)}, torch::kUInt8).to(torch::kInt64);
  return out;
}

}  // namespace eventgrad_example
