// Fashion-MNIST from the Debian package dataset-fashion-mnist (/usr/share/datasets/fashion-mnist):
// gzipped IDX files, big-endian. Images are returned as float tensors [n, 1, 28, 28] normalised
// with the training set's mean and standard deviation, labels as int64 [n].
#pragma once

#include <torch/torch.h>

#include <string>

namespace eventgrad_example {

struct Dataset {
  torch::Tensor images;
  torch::Tensor labels;
};

// split "train" or "t10k". Throws std::runtime_error naming the file on any problem.
Dataset loadFashionMnist(const std::string& directory, const std::string& split);

}  // namespace eventgrad_example
