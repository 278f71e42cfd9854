// EventGraD's experiment (Ghosh and Gupta, "EventGraD: Event-Triggered Communication in Parallel
// Stochastic Gradient Descent", section V) on Fashion-MNIST with libtorch:
// the paper's CNN-1 trained on every MPI rank with batch 64 per rank and plain SGD (lr 0.05), in
// one of three modes:
//   allreduce  data-parallel SGD: gradients averaged with scclAllReduce every pass (baseline)
//   dpsgd      decentralised SGD: parameters averaged with the ring neighbours every pass
//              (an event communicator with threshold 0, so every tensor is sent every pass)
//   eventgrad  the same, but a tensor is sent only on an event (adaptive threshold, horizon 1,
//              history 2, 30 forced passes: the paper's settings; --config overrides them)
// As in the reference code, a pass is forward, backward, then the exchange (which averages the
// parameters in place), then the optimizer step with the gradient taken before the averaging.
// After every epoch the model average over the ranks (scclEventCommAverageModel, the paper's
// evaluation) is tested on the test set (each rank tests a share; the counts are summed), and the
// fraction of messages sent against sending every tensor every pass is printed.
//
//   mpirun -np 4 --oversubscribe ./eventgrad_train --mode eventgrad --epochs 10
//
// Exit code 1 if --min-accuracy or --max-message-fraction is given and missed (for CI).
#include <mpi.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fashion_mnist.h"
#include "sparsecoll/sparsecoll.h"

namespace {

struct Options {
  std::string mode = "eventgrad";
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string config_path;
  int epochs = 10;
  int batch = 64;
  double lr = 0.05;
  long batches_per_epoch = -1;  // -1: the whole shard
  long test_limit = -1;         // -1: the whole test set
  double min_accuracy = -1;
  double max_message_fraction = -1;
  uint64_t seed = 1;
};

struct Cnn1Impl : torch::nn::Module {
  Cnn1Impl()
      : conv1(torch::nn::Conv2dOptions(1, 10, 5)),
        conv2(torch::nn::Conv2dOptions(10, 20, 5)),
        fc1(320, 100),
        fc2(100, 10) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv2_drop", conv2_drop);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(torch::max_pool2d(conv1->forward(x), 2));
    x = torch::relu(torch::max_pool2d(conv2_drop->forward(conv2->forward(x)), 2));
    x = x.view({-1, 320});
    x = torch::relu(fc1->forward(x));
    x = torch::dropout(x, 0.5, is_training());
    return torch::log_softmax(fc2->forward(x), 1);
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Dropout2d conv2_drop;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Cnn1);

void check(scclResult_t result, scclComm_t comm, const char* what) {
  if (result != scclSuccess) {
    throw std::runtime_error(std::string(what) + ": " + scclGetErrorString(result) + " (" +
                             scclGetLastError(comm) + ")");
  }
}

// Makes every parameter a view into one flat float32 buffer (the layout the event communicator
// exchanges) and returns it with the tensor sizes.
torch::Tensor flattenParameters(Cnn1& model, std::vector<size_t>* sizes) {
  int64_t total = 0;
  for (auto& p : model->parameters()) total += p.numel();
  torch::Tensor flat = torch::empty({total}, torch::kFloat32);
  int64_t offset = 0;
  sizes->clear();
  torch::NoGradGuard no_grad;
  for (auto& p : model->parameters()) {
    torch::Tensor view = flat.narrow(0, offset, p.numel());
    view.copy_(p.flatten());
    p.set_data(view.view(p.sizes()));
    sizes->push_back(size_t(p.numel()));
    offset += p.numel();
  }
  return flat;
}

Options parseOptions(int argc, char** argv) {
  Options o;
  std::map<std::string, std::string> values;
  for (int i = 1; i < argc; ++i) {
    std::string key = argv[i];
    if (key.rfind("--", 0) != 0 || i + 1 >= argc) throw std::runtime_error("bad argument " + key);
    values[key.substr(2)] = argv[++i];
  }
  for (const auto& [key, value] : values) {
    if (key == "mode")
      o.mode = value;
    else if (key == "data")
      o.data = value;
    else if (key == "config")
      o.config_path = value;
    else if (key == "epochs")
      o.epochs = std::stoi(value);
    else if (key == "batch")
      o.batch = std::stoi(value);
    else if (key == "lr")
      o.lr = std::stod(value);
    else if (key == "batches")
      o.batches_per_epoch = std::stol(value);
    else if (key == "test-limit")
      o.test_limit = std::stol(value);
    else if (key == "min-accuracy")
      o.min_accuracy = std::stod(value);
    else if (key == "max-message-fraction")
      o.max_message_fraction = std::stod(value);
    else if (key == "seed")
      o.seed = std::stoull(value);
    else
      throw std::runtime_error("unknown option --" + key);
  }
  if (o.mode != "allreduce" && o.mode != "dpsgd" && o.mode != "eventgrad")
    throw std::runtime_error("--mode must be allreduce, dpsgd or eventgrad");
  return o;
}

scclEventConfig_t eventConfig(const Options& o) {
  scclEventConfig_t config = SCCL_EVENT_CONFIG_INITIALIZER;  // the paper's settings
  if (o.mode == "dpsgd") {
    config.thresholdMode = scclEventThresholdStatic;
    config.staticThreshold = 0.0;
  }
  if (!o.config_path.empty()) {
    std::ifstream file(o.config_path);
    std::stringstream text;
    text << file.rdbuf();
    if (!file) throw std::runtime_error("cannot read " + o.config_path);
    check(scclEventConfigFromJson(text.str().c_str(), &config), nullptr, o.config_path.c_str());
  }
  return config;
}

// Test accuracy (percent) of the parameters `flat` on this rank's share of the test set, summed
// over the ranks.
double testAccuracy(scclComm_t comm, int rank, int nranks, Cnn1& eval_model,
                    torch::Tensor& eval_flat, const torch::Tensor& averaged,
                    const eventgrad_example::Dataset& test, long limit) {
  torch::NoGradGuard no_grad;
  eval_flat.copy_(averaged);
  eval_model->eval();
  int64_t n = test.images.size(0);
  if (limit > 0) n = std::min<int64_t>(n, limit);
  int64_t counts[2] = {0, 0};  // correct, tested
  for (int64_t begin = rank * 1000; begin < n; begin += int64_t(nranks) * 1000) {
    int64_t len = std::min<int64_t>(1000, n - begin);
    torch::Tensor out = eval_model->forward(test.images.narrow(0, begin, len));
    counts[0] += out.argmax(1).eq(test.labels.narrow(0, begin, len)).sum().item<int64_t>();
    counts[1] += len;
  }
  check(scclAllReduce(counts, counts, 2, scclInt64, scclSum, comm, nullptr), comm, "scclAllReduce");
  return 100.0 * double(counts[0]) / double(counts[1]);
}

int run(scclComm_t comm, const Options& o) {
  int rank = 0, nranks = 1;
  scclCommUserRank(comm, &rank);
  scclCommCount(comm, &nranks);
  torch::set_num_threads(1);
  const auto train = eventgrad_example::loadFashionMnist(o.data, "train");
  const auto test = eventgrad_example::loadFashionMnist(o.data, "t10k");

  torch::manual_seed(o.seed);  // the same initial model on every rank
  Cnn1 model, eval_model;
  std::vector<size_t> sizes, eval_sizes;
  torch::Tensor flat = flattenParameters(model, &sizes);
  torch::Tensor eval_flat = flattenParameters(eval_model, &eval_sizes);
  torch::manual_seed(o.seed * 1000 + uint64_t(rank));  // dropout differs per rank
  const size_t count = size_t(flat.numel());
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(o.lr));

  scclEventComm_t ec = nullptr;
  scclEventConfig_t config = eventConfig(o);
  check(scclEventCommCreate(&ec, comm, count, scclFloat32, sizes.data(), int(sizes.size()), nullptr,
                            0, nullptr, &config),
        comm, "scclEventCommCreate");
  torch::Tensor grads = torch::empty({int64_t(count)}, torch::kFloat32);
  torch::Tensor averaged = torch::empty_like(flat);

  const int64_t ntrain = train.images.size(0);
  const int64_t shard = ntrain / nranks;
  int64_t batches = shard / o.batch;
  if (o.batches_per_epoch > 0) batches = std::min<int64_t>(batches, o.batches_per_epoch);
  if (rank == 0) {
    std::printf(
        "# mode %s, %d ranks, %zu parameters in %zu tensors, %lld batches of %d per rank "
        "and epoch, lr %g\n",
        o.mode.c_str(), nranks, count, sizes.size(), static_cast<long long>(batches), o.batch,
        o.lr);
    if (o.mode != "allreduce") {
      std::printf(
          "# event config: threshold %s, horizon %g, static threshold %g, history %d, "
          "initial passes %d, max silent passes %d, averaging %s, %s\n",
          config.thresholdMode == scclEventThresholdAdaptive ? "adaptive" : "static",
          config.horizon, config.staticThreshold, config.history, config.initialPasses,
          config.maxSilentPasses,
          config.averaging == scclEventAverageDifferences ? "differences" : "copies",
          config.synchronous ? "synchronous" : "asynchronous");
    }
    std::fflush(stdout);
  }
  double accuracy = 0, fraction = 1.0;
  uint64_t previous_sent = 0, previous_dense = 0;
  auto start = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    model->train();
    // The same permutation on every rank (seeded by the epoch); rank r takes every n-th sample.
    auto generator = at::detail::createCPUGenerator(o.seed * 7919 + uint64_t(epoch));
    torch::Tensor permutation = torch::randperm(ntrain, generator, torch::kInt64);
    torch::Tensor mine = permutation.slice(0, rank, ntrain, nranks);
    double loss_sum = 0;
    for (int64_t b = 0; b < batches; ++b) {
      torch::Tensor index = mine.narrow(0, b * o.batch, o.batch);
      torch::Tensor x = train.images.index_select(0, index);
      torch::Tensor y = train.labels.index_select(0, index);
      optimizer.zero_grad();
      torch::Tensor loss = torch::nll_loss(model->forward(x), y);
      loss.backward();
      loss_sum += loss.item<double>();
      if (o.mode == "allreduce") {
        int64_t offset = 0;
        for (auto& p : model->parameters()) {
          grads.narrow(0, offset, p.numel()).copy_(p.grad().flatten());
          offset += p.numel();
        }
        check(scclAllReduce(grads.data_ptr<float>(), grads.data_ptr<float>(), count, scclFloat32,
                            scclAvg, comm, nullptr),
              comm, "scclAllReduce");
        offset = 0;
        for (auto& p : model->parameters()) {
          p.grad().copy_(grads.narrow(0, offset, p.numel()).view(p.sizes()));
          offset += p.numel();
        }
      } else {
        check(scclEventCommStep(ec, flat.data_ptr<float>(), count, scclFloat32, nullptr), comm,
              "scclEventCommStep");
      }
      optimizer.step();
    }
    check(scclEventCommAverageModel(ec, flat.data_ptr<float>(), averaged.data_ptr<float>(), count,
                                    scclFloat32, nullptr),
          comm, "scclEventCommAverageModel");
    accuracy =
        testAccuracy(comm, rank, nranks, eval_model, eval_flat, averaged, test, o.test_limit);
    scclEventStats_t stats{};
    stats.size = sizeof(stats);
    check(scclEventCommGetStats(ec, &stats), comm, "scclEventCommGetStats");
    // Messages of all ranks: sent and what D-PSGD would send, whole run and this epoch.
    double m[4] = {double(stats.messagesSent), double(stats.messagesDense),
                   double(stats.messagesSent - previous_sent),
                   double(stats.messagesDense - previous_dense)};
    previous_sent = stats.messagesSent;
    previous_dense = stats.messagesDense;
    double loss_mean[1] = {loss_sum / double(std::max<int64_t>(1, batches))};
    check(scclAllReduce(m, m, 4, scclFloat64, scclSum, comm, nullptr), comm, "scclAllReduce");
    check(scclAllReduce(loss_mean, loss_mean, 1, scclFloat64, scclAvg, comm, nullptr), comm,
          "scclAllReduce");
    const bool exchanged = o.mode != "allreduce";
    fraction = exchanged && m[1] > 0 ? m[0] / m[1] : 1.0;
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rank == 0) {
      std::printf(
          "epoch %d mode %s train_loss %.4f test_accuracy %.2f message_fraction %.4f "
          "(epoch %.4f) time %.1f s\n",
          epoch, o.mode.c_str(), loss_mean[0], accuracy, fraction,
          exchanged && m[3] > 0 ? m[2] / m[3] : 1.0, seconds);
      std::fflush(stdout);
    }
  }
  scclEventStats_t stats{};
  stats.size = sizeof(stats);
  check(scclEventCommGetStats(ec, &stats), comm, "scclEventCommGetStats");
  if (rank == 0 && o.mode != "allreduce") {
    std::printf(
        "# rank 0: %llu passes, %llu events, byte fraction %.4f, mean staleness %.2f "
        "passes (max %llu), read retries %llu\n",
        static_cast<unsigned long long>(stats.passes),
        static_cast<unsigned long long>(stats.events), stats.byteFraction, stats.meanStaleness,
        static_cast<unsigned long long>(stats.maxStaleness),
        static_cast<unsigned long long>(stats.readRetries));
  }
  check(scclEventCommDestroy(ec), comm, "scclEventCommDestroy");
  int code = 0;
  if (o.min_accuracy >= 0 && accuracy < o.min_accuracy) {
    if (rank == 0) std::printf("FAIL: accuracy %.2f below %.2f\n", accuracy, o.min_accuracy);
    code = 1;
  }
  if (o.max_message_fraction >= 0 && fraction > o.max_message_fraction) {
    if (rank == 0)
      std::printf("FAIL: message fraction %.4f above %.4f\n", fraction, o.max_message_fraction);
    code = 1;
  }
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 1;
  scclComm_t comm = nullptr;
  try {
    Options options = parseOptions(argc, argv);
    check(scclCommInitMpi(&comm, nullptr, nullptr), nullptr, "scclCommInitMpi");
    code = run(comm, options);
    scclCommDestroy(comm);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "eventgrad_train: %s\n", error.what());
    // One failed rank ends the job rather than leaving the others waiting.
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return code;
}
