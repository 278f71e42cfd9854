/* The public header compiled alone as strict C99 (-Wpedantic -Werror): no C++ leaks into it.
 * It also checks at run time that the basic ABI answers as documented. */
#include <sparsecoll/sparsecoll.h>

#include <stdio.h>
#include <string.h>

int sccl_part_headers_first_compiled(void); /* part_headers_first.c */

int main(void) {
  scclConfig_t config = SCCL_CONFIG_INITIALIZER;
  int version = 0;
  scclComm_t comm = SCCL_COMM_NULL;
  int count = 0;
  if (sizeof(scclUniqueId) != SCCL_UNIQUE_ID_BYTES) return 1;
  if (config.size != sizeof(scclConfig_t) || config.magic != SCCL_CONFIG_MAGIC) return 2;
  if (scclGetVersion(&version) != scclSuccess || version != SCCL_VERSION_CODE) return 3;
  if (strcmp(scclGetErrorString(scclInvalidArgument), "invalid argument") != 0) return 4;
  if (scclCommCount(comm, &count) != scclInvalidArgument) return 5;
  if (strlen(scclGetLastError(NULL)) == 0) return 6;
  {
    /* The EventGraD initializer and entry points from C. */
    scclEventConfig_t event_config = SCCL_EVENT_CONFIG_INITIALIZER;
    if (event_config.size != sizeof(scclEventConfig_t) || event_config.history != 2) return 7;
    if (scclEventCommStep(NULL, NULL, 0, scclFloat32, NULL) != scclInvalidArgument) return 8;
  }
  if (!sccl_part_headers_first_compiled()) return 9;
  printf("sparsecoll %d from C99: ok\n", version);
  return 0;
}
