// The few C calls NetworkQueue needs that Swift cannot make directly: libcurl's variadic
// curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo, and naming a thread. libcurl itself is opened at run time with
// dlopen by the Swift code, which passes the function pointers it found here; this target needs no curl
// header, no -dev package and no link flag. The prototypes below are our own, written from libcurl's
// documented ABI (every CURLoption takes a long, a pointer or a curl_off_t, which is int64_t on 64-bit
// Linux).
#ifndef NETWORKQUEUE_CURL_SHIM_H
#define NETWORKQUEUE_CURL_SHIM_H

#include <stdint.h>

/// curl_easy_setopt and curl_multi_setopt: (handle, option, ...) -> code.
typedef int (*nq_setopt_function)(void *handle, int option, ...);
/// curl_easy_getinfo: (handle, info, ...) -> code.
typedef int (*nq_getinfo_function)(void *handle, int info, ...);

/// Calls a setopt function with a `long` argument.
int nq_setopt_long(void *function, void *handle, int option, long value);
/// Calls a setopt function with a pointer argument (strings, lists, callbacks, user data).
int nq_setopt_pointer(void *function, void *handle, int option, const void *value);
/// Calls a setopt function with a `curl_off_t` (64-bit) argument.
int nq_setopt_offset(void *function, void *handle, int option, int64_t value);
/// Calls curl_easy_getinfo with a pointer to where the answer is written.
int nq_getinfo(void *function, void *handle, int info, void *answer);

/// Names the calling thread as the system shows it (Linux keeps 15 characters). Foundation's `Thread.name`
/// does not reach it on Linux, and `pthread_setname_np` needs `_GNU_SOURCE`, which Swift's Glibc lacks.
void nq_name_current_thread(const char *name);

/// An anonymous in-memory file (Linux `memfd_create`, close-on-exec) holding `length` bytes of `data`, rewound;
/// its descriptor, or -1 where there is none. Opened by path as `/proc/self/fd/<fd>` while it stays open.
int nq_memory_file(const char *name, const void *data, unsigned long length);

/// Bytes in use on the heap, over every malloc arena (glibc's mallinfo2), or -1 where that cannot be told:
/// for the heap-growth test and the benchmarks.
long long nq_heap_in_use(void);

/// A set of mutexes for libcurl's share lock callbacks (see `nq_share_dns`), or NULL when memory ran out.
void *nq_share_locks_create(void);
/// Frees what `nq_share_locks_create` made (NULL: nothing), once no share uses it.
void nq_share_locks_destroy(void *locks);
/// Makes the share handle `share` (from curl_share_init) share libcurl's DNS cache, locked with `locks`, through
/// curl_share_setopt (`setopt`): 0, or libcurl's CURLSHcode.
int nq_share_dns(void *setopt, void *share, void *locks);

/// The leading fields of libcurl's `curl_version_info_data`, as every version since 7.10 lays them out.
typedef struct {
    int age;
    const char *version;
    unsigned int version_num;
    const char *host;
    int features;
} nq_curl_version_info;

/// One curl blob (`struct curl_blob`): data, length, flags (1 = libcurl copies it).
typedef struct {
    const void *data;
    unsigned long len;
    unsigned int flags;
} nq_curl_blob;

/// zlib's `z_stream`, as zlib 1.2 and later lay it out (zlib, like libcurl, is opened at run time).
typedef struct {
    const unsigned char *next_in;
    unsigned int avail_in;
    unsigned long total_in;
    unsigned char *next_out;
    unsigned int avail_out;
    unsigned long total_out;
    const char *msg;
    void *state;
    void *zalloc;
    void *zfree;
    void *opaque;
    int data_type;
    unsigned long adler;
    unsigned long reserved;
} nq_z_stream;

/// The file system calls of the output folder's guardian that Swift's Glibc module does not export.
///
/// Sets the extended attribute `name` of the open file `fd` to `length` bytes of `value`: 0, or -1 with errno
/// (ENOTSUP where the file system keeps none).
int nq_set_attribute(int fd, const char *name, const void *value, unsigned long length);
/// Reads the extended attribute `name` of the open file `fd` (or of `path`, never following a link, when `fd`
/// is -1) into `buffer`: its length, or -1 with errno (see `nq_is_no_attribute`; ERANGE when it is longer than
/// `capacity`; ENOTSUP where the file system keeps none).
long nq_get_attribute(int fd, const char *path, const char *name, void *buffer, unsigned long capacity);
/// True when the errno value `error` says the file has no such attribute (ENODATA on Linux, ENOATTR elsewhere).
int nq_is_no_attribute(int error);
/// Linux's `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`: opens `path` beneath the folder `dirfd` with
/// `flags`, never leaving it and never following a link on the way (ELOOP, EXDEV); -1 with errno ENOSYS where the
/// kernel (before 5.6) or the platform has no such call.
int nq_open_beneath(int dirfd, const char *path, int flags);

#endif
