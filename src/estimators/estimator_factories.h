// Constructors of the estimators listed in the registry (estimator_registry.cc). makeEstimator()
// has checked the knobs every estimator shares (density, nranks, threshold not NaN); each
// constructor checks the ones only it uses.
#pragma once

#include <memory>

#include "estimators/threshold_estimator.h"

namespace sccl {

scclResult_t createTopkEstimator(const EstimatorParams& params,
                                 std::unique_ptr<ThresholdEstimator>* out);
scclResult_t createFixedEstimator(const EstimatorParams& params,
                                  std::unique_ptr<ThresholdEstimator>* out);
scclResult_t createScalingEstimator(const EstimatorParams& params,
                                    std::unique_ptr<ThresholdEstimator>* out);
scclResult_t createSidcoExpEstimator(const EstimatorParams& params,
                                     std::unique_ptr<ThresholdEstimator>* out);
scclResult_t createSidcoGpEstimator(const EstimatorParams& params,
                                    std::unique_ptr<ThresholdEstimator>* out);
scclResult_t createSidcoGammaGpEstimator(const EstimatorParams& params,
                                         std::unique_ptr<ThresholdEstimator>* out);
scclResult_t createDgcEstimator(const EstimatorParams& params,
                                std::unique_ptr<ThresholdEstimator>* out);
scclResult_t createRedsyncEstimator(const EstimatorParams& params,
                                    std::unique_ptr<ThresholdEstimator>* out);
scclResult_t createGaussiankEstimator(const EstimatorParams& params,
                                      std::unique_ptr<ThresholdEstimator>* out);

}  // namespace sccl
