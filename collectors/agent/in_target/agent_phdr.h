/*
 * Whether a loaded object (as dl_iterate_phdr describes it) holds an
 * address: one of its PT_LOAD segments covers it. agent_attach.c uses it to
 * find other copies of the agent, agent_got.c to find the agent's own code.
 */
#ifndef MEMTRIMD_AGENT_PHDR_H
#define MEMTRIMD_AGENT_PHDR_H

#include <link.h>
#include <stdint.h>

static inline int agent_object_holds(const struct dl_phdr_info* info, uintptr_t a) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && a >= start && a - start < ph->p_memsz) {
      return 1;
    }
  }
  return 0;
}

#endif
