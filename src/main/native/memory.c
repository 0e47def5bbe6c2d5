/* Registered memory that can never be read again once retired.
 *
 * On one host UCX reads another process's memory with CMA (process_vm_readv): no key is checked, so
 * after a deregistration a peer's READ succeeds whenever the address range is still, or again,
 * mapped, returning whatever lives there now. Retiring a range therefore does not unmap it: it maps
 * an inaccessible, unreserved range over it, which frees the pages and makes every later READ of it
 * fail (EFAULT), for the life of the process. The cost is address space only. */
#include <sys/mman.h>
#include <unistd.h>

#include "pdnixl_internal.h"

static int page_multiple(uint64_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 && len > 0 && len % (uint64_t)page == 0;
}

int pdx_mem_alloc(uint64_t len, uint64_t *addr_out)
{
    if (!page_multiple(len) || addr_out == NULL) {
        return PDX_ERR_ARGUMENT;
    }
    void *p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        return PDX_ERR_NO_MEMORY;
    }
    *addr_out = (uint64_t)(uintptr_t)p;
    return PDX_OK;
}

int pdx_mem_retire(uint64_t addr, uint64_t len)
{
    if (addr == 0 || !page_multiple(len)) {
        return PDX_ERR_ARGUMENT;
    }
    void *p = mmap((void *)(uintptr_t)addr, (size_t)len, PROT_NONE,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? PDX_ERR_NO_MEMORY : PDX_OK;
}
