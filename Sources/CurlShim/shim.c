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
