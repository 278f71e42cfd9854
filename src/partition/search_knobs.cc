#include "partition/search_knobs.h"

namespace sccl {

SCCL_DEFINE_KNOB_AXIS(SearchKnobs, SCCL_SEARCH_KNOBS)

}  // namespace sccl
