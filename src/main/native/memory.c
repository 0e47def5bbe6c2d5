/* Registered memory that can never be read again once retired.
 *
 * On one host UCX reads another process's memory with CMA (process_vm_readv): no key is checked, so
 * after a deregistration a peer's READ succeeds whenever the address range is still, or again,
 * mapped, returning whatever lives there now. Retiring a range therefore does not unmap it: it maps
 * an inaccessible, unreserved range over it, which frees the pages and makes every later READ of it
 * fail (EFAULT), for the life of the process. The cost is address space only. */
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

/* Opens path as a new, empty file with the exclusive lock taken; PDX_ERR_BUSY when another process
 * created it first (it is then that process's, not ours to take). */
static int create_locked(const char *path, int *fd_out)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return errno == EEXIST ? PDX_ERR_BUSY : PDX_ERR_IO;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int rc = errno == EWOULDBLOCK ? PDX_ERR_BUSY : PDX_ERR_IO;
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return PDX_OK;
}

/* A file at path that no live mapping holds was left by an owner that died (a clean owner unlinks its
 * file). An engine may still map it, so it is never truncated or written: it is unlinked, and its pages
 * stay what they were for whoever maps them, and a new file takes the path (an engine that maps by path
 * sees a new inode and maps that). Its lock is held across the unlink and the new file's creation, so
 * a second taker that locks it afterwards finds the path naming another file and unlinks nothing. */
static int replace_stale(const char *path, int *fd_out)
{
    int stale = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (stale < 0) {
        return errno == ENOENT ? create_locked(path, fd_out) : PDX_ERR_IO;
    }
    int rc;
    struct stat held, named;
    if (flock(stale, LOCK_EX | LOCK_NB) != 0) {
        rc = errno == EWOULDBLOCK ? PDX_ERR_BUSY : PDX_ERR_IO;
        goto out_close;
    }
    if (fstat(stale, &held) != 0 || !S_ISREG(held.st_mode)) {
        rc = PDX_ERR_IO;
        goto out_close;
    }
    if (lstat(path, &named) != 0 || named.st_dev != held.st_dev || named.st_ino != held.st_ino) {
        rc = PDX_ERR_BUSY; /* taken over by another process since we opened it */
        goto out_close;
    }
    if (unlink(path) != 0) {
        rc = PDX_ERR_IO;
        goto out_close;
    }
    rc = create_locked(path, fd_out);
out_close:
    close(stale);
    return rc;
}

/* The lock is taken on the open file description, which the mapping keeps alive after the fd is
 * closed: it is held exactly as long as the mapping, and pdx_mem_retire (which maps over the range)
 * drops it. So a crashed process leaves a stale file that the next one replaces (replace_stale), while
 * a live one can never have its file taken over. */
int pdx_mem_map_file(const char *path, uint64_t len, uint64_t *addr_out)
{
    if (path == NULL || path[0] != '/' || !page_multiple(len) || addr_out == NULL) {
        return PDX_ERR_ARGUMENT;
    }
    int fd = -1;
    int rc = create_locked(path, &fd);
    if (rc == PDX_ERR_BUSY) {
        rc = replace_stale(path, &fd);
    }
    if (rc != PDX_OK) {
        return rc;
    }
    /* From here the path names our new, empty file. */
    int err = posix_fallocate(fd, 0, (off_t)len);
    if (err != 0) {
        rc = err == ENOSPC ? PDX_ERR_NO_MEMORY : PDX_ERR_IO;
        goto err_unlink;
    }
    void *p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        rc = PDX_ERR_NO_MEMORY;
        goto err_unlink;
    }
    *addr_out = (uint64_t)(uintptr_t)p;
    goto out_close;
err_unlink:
    unlink(path);
out_close:
    close(fd);
    return rc;
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
