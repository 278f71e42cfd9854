// Queries of the loaded UCX library (see ucx_info.h): the components and memory domains through
// UCT (each memory domain opened with its default configuration and closed again), the memory
// types through a short-lived UCP context.
#include "transports/ucx/ucx_info.h"

#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

namespace sccl {
namespace {

void listDomainTransports(uct_component_h component, const char* md_name,
                          std::vector<std::string>* out) {
  uct_md_config_t* config = nullptr;
  if (uct_md_config_read(component, nullptr, nullptr, &config) != UCS_OK) return;
  uct_md_h md = nullptr;
  ucs_status_t status = uct_md_open(component, md_name, config, &md);
  uct_config_release(config);
  if (status != UCS_OK) return;
  uct_tl_resource_desc_t* resources = nullptr;
  unsigned count = 0;
  if (uct_md_query_tl_resources(md, &resources, &count) == UCS_OK) {
    for (unsigned i = 0; i < count; ++i) {
      out->push_back(std::string(resources[i].tl_name) + "/" + resources[i].dev_name);
    }
    uct_release_tl_resource_list(resources);
  }
  uct_md_close(md);
}

}  // namespace

UcxLibraryInfo queryUcxLibrary() {
  UcxLibraryInfo info;
  info.version = ucp_get_version_string();
  uct_component_h* components = nullptr;
  unsigned ncomponents = 0;
  if (uct_query_components(&components, &ncomponents) == UCS_OK) {
    for (unsigned c = 0; c < ncomponents; ++c) {
      uct_component_attr_t attr{};
      attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
      if (uct_component_query(components[c], &attr) != UCS_OK) continue;
      std::vector<uct_md_resource_desc_t> domains(attr.md_resource_count);
      attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
      attr.md_resources = domains.data();
      if (uct_component_query(components[c], &attr) != UCS_OK) continue;
      for (const uct_md_resource_desc_t& domain : domains) {
        listDomainTransports(components[c], domain.md_name, &info.transports);
      }
    }
    uct_release_component_list(components);
  }
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) == UCS_OK) {
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    ucp_context_h context = nullptr;
    if (ucp_init(&params, config, &context) == UCS_OK) {
      ucp_context_attr_t attr{};
      attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
      if (ucp_context_query(context, &attr) == UCS_OK) {
        info.cuda_memory = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
      }
      ucp_cleanup(context);
    }
    ucp_config_release(config);
  }
  return info;
}

}  // namespace sccl
