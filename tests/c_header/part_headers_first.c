/* The ABI's part headers each stand alone: included before sparsecoll.h (here count_sketch.h and
 * event.h, in C99 with -Wpedantic -Werror) they bring in the shared types themselves. */
#include <sparsecoll/count_sketch.h>
#include <sparsecoll/event.h>

int sccl_part_headers_first_compiled(void);

int sccl_part_headers_first_compiled(void) {
  scclEventConfig_t event_config = SCCL_EVENT_CONFIG_INITIALIZER;
  /* A NULL table is an invalid argument: the count sketch entry point is declared and linked. */
  if (scclCountSketchDecode(NULL, scclFloat32, 1, 1, 0, 1, 1, NULL, NULL, NULL) !=
      scclInvalidArgument)
    return 0;
  return event_config.size == sizeof(scclEventConfig_t);
}
