#define _GNU_SOURCE
#include <pthread.h>
#include "CurlShim.h"

int nq_setopt_long(void *function, void *handle, int option, long value) {
    return ((nq_setopt_function)function)(handle, option, value);
}

int nq_setopt_pointer(void *function, void *handle, int option, const void *value) {
    return ((nq_setopt_function)function)(handle, option, value);
}

int nq_setopt_offset(void *function, void *handle, int option, int64_t value) {
    return ((nq_setopt_function)function)(handle, option, value);
}

int nq_getinfo(void *function, void *handle, int info, void *answer) {
    return ((nq_getinfo_function)function)(handle, info, answer);
}

void nq_name_current_thread(const char *name) {
#if defined(__linux__)
    pthread_setname_np(pthread_self(), name);
#elif defined(__APPLE__)
    pthread_setname_np(name);
#endif
}

#if defined(__GLIBC__)
#include <malloc.h>
#endif

long long nq_heap_in_use(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    return (long long)mallinfo2().uordblks;
#else
    return -1;
#endif
}

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#include <errno.h>

int nq_memory_file(const char *name, const void *data, unsigned long length) {
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) return -1;
    const char *bytes = data;
    unsigned long written = 0;
    while (written < length) {
        ssize_t count = write(fd, bytes + written, length - written);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) {
            close(fd);
            return -1;
        }
        written += (unsigned long)count;
    }
    if (lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}
#else
int nq_memory_file(const char *name, const void *data, unsigned long length) {
    (void)name; (void)data; (void)length;
    return -1;
}
#endif

#include <errno.h>
#if defined(__linux__)
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdint.h>

int nq_set_attribute(int fd, const char *name, const void *value, unsigned long length) {
    return fsetxattr(fd, name, value, length, 0);
}

long nq_get_attribute(int fd, const char *path, const char *name, void *buffer, unsigned long capacity) {
    return fd >= 0 ? (long)fgetxattr(fd, name, buffer, capacity) : (long)lgetxattr(path, name, buffer, capacity);
}

int nq_is_no_attribute(int error) { return error == ENODATA; }

int nq_open_beneath(int dirfd, const char *path, int flags) {
#ifdef SYS_openat2
    /* struct open_how, as the kernel's uapi lays it out: flags, mode, resolve (three u64). */
    struct { uint64_t flags; uint64_t mode; uint64_t resolve; } how = { (uint64_t)(unsigned)flags, 0, 0x08 | 0x04 };
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
#else
    (void)dirfd; (void)path; (void)flags;
    errno = ENOSYS;
    return -1;
#endif
}
#elif defined(__APPLE__)
#include <sys/xattr.h>

int nq_set_attribute(int fd, const char *name, const void *value, unsigned long length) {
    return fsetxattr(fd, name, value, length, 0, 0);
}

long nq_get_attribute(int fd, const char *path, const char *name, void *buffer, unsigned long capacity) {
    return fd >= 0 ? (long)fgetxattr(fd, name, buffer, capacity, 0, 0)
                   : (long)getxattr(path, name, buffer, capacity, 0, XATTR_NOFOLLOW);
}

int nq_is_no_attribute(int error) { return error == ENOATTR; }

int nq_open_beneath(int dirfd, const char *path, int flags) {
    (void)dirfd; (void)path; (void)flags;
    errno = ENOSYS;
    return -1;
}
#else
int nq_set_attribute(int fd, const char *name, const void *value, unsigned long length) {
    (void)fd; (void)name; (void)value; (void)length;
    errno = ENOTSUP;
    return -1;
}
long nq_get_attribute(int fd, const char *path, const char *name, void *buffer, unsigned long capacity) {
    (void)fd; (void)path; (void)name; (void)buffer; (void)capacity;
    errno = ENOTSUP;
    return -1;
}
int nq_is_no_attribute(int error) { (void)error; return 0; }
int nq_open_beneath(int dirfd, const char *path, int flags) {
    (void)dirfd; (void)path; (void)flags;
    errno = ENOSYS;
    return -1;
}
#endif

// libcurl's share interface, for one DNS cache over a transport's engine threads: a mutex for each kind of data
// libcurl locks (curl_lock_data has 8 values), taken by its lock callbacks.
#include <stdlib.h>

typedef struct {
    pthread_mutex_t locks[8];
} nq_share_mutexes;

void *nq_share_locks_create(void) {
    nq_share_mutexes *mutexes = malloc(sizeof(nq_share_mutexes));
    if (mutexes == NULL) return NULL;
    for (int index = 0; index < 8; index++) pthread_mutex_init(&mutexes->locks[index], NULL);
    return mutexes;
}

void nq_share_locks_destroy(void *locks) {
    nq_share_mutexes *mutexes = locks;
    if (mutexes == NULL) return;
    for (int index = 0; index < 8; index++) pthread_mutex_destroy(&mutexes->locks[index]);
    free(mutexes);
}

static void nq_share_lock(void *handle, int data, int access, void *user) {
    (void)handle;
    (void)access;
    pthread_mutex_lock(&((nq_share_mutexes *)user)->locks[data & 7]);
}

static void nq_share_unlock(void *handle, int data, void *user) {
    (void)handle;
    pthread_mutex_unlock(&((nq_share_mutexes *)user)->locks[data & 7]);
}

int nq_share_dns(void *setopt, void *share, void *locks) {
    nq_setopt_function function = (nq_setopt_function)setopt;
    // CURLSHOPT_LOCKFUNC 3, CURLSHOPT_UNLOCKFUNC 4, CURLSHOPT_USERDATA 5, CURLSHOPT_SHARE 1 with CURL_LOCK_DATA_DNS 3.
    int code = function(share, 3, nq_share_lock);
    if (code == 0) code = function(share, 4, nq_share_unlock);
    if (code == 0) code = function(share, 5, locks);
    if (code == 0) code = function(share, 1, (int)3);
    return code;
}
