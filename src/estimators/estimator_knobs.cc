#include "estimators/estimator_knobs.h"

namespace sccl {

SCCL_DEFINE_KNOB_AXIS(EstimatorKnobs, SCCL_ESTIMATOR_KNOBS)

}  // namespace sccl
