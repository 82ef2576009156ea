// tbucket's own system calls, for Linux, where Node.js has no binding:
// fcntl(F_GETPIPE_SZ / F_SETPIPE_SZ) on a pipe, and splice(2) between a pipe
// and another descriptor, done in Node's thread pool so that a descriptor that
// blocks (a stalled reader or writer) never holds the event loop.
// Failures are returned as negative errno values; nothing here throws for them.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <node_api.h>

#define CHECK(call)                                  \
  do {                                               \
    if ((call) != napi_ok) return NULL;              \
  } while (0)

static int32_t int_arg(napi_env env, napi_value value, int32_t fallback) {
  int32_t out = fallback;
  if (napi_get_value_int32(env, value, &out) != napi_ok) return fallback;
  return out;
}

static napi_value number(napi_env env, double value) {
  napi_value out;
  CHECK(napi_create_double(env, value, &out));
  return out;
}

// pipeSize(fd): the capacity of the pipe on fd, or -errno (EBADF: not a pipe).
static napi_value pipe_size(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int result = fcntl(int_arg(env, argv[0], -1), F_GETPIPE_SZ);
  return number(env, result < 0 ? -errno : result);
}

// setPipeSize(fd, bytes): asks for a capacity of at least `bytes`; the capacity granted, or -errno
// (EPERM over /proc/sys/fs/pipe-max-size or the user's pipe quota, EBADF not a pipe).
static napi_value set_pipe_size(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int result = fcntl(int_arg(env, argv[0], -1), F_SETPIPE_SZ, int_arg(env, argv[1], 0));
  return number(env, result < 0 ? -errno : result);
}

// bytesReadable(fd): what a read of fd would find now (FIONREAD: a pipe's content, a file's
// rest), -ENODATA at the end of the input, or -errno.
static napi_value bytes_readable(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int fd = int_arg(env, argv[0], -1);
  struct stat stats;
  if (fstat(fd, &stats) < 0) return number(env, -errno);
  if (S_ISREG(stats.st_mode)) {
    // FIONREAD's int cannot hold a large file's rest: size and position, in 64 bits.
    off_t position = lseek(fd, 0, SEEK_CUR);
    if (position < 0) return number(env, -errno);
    return number(env, stats.st_size > position ? (double)(stats.st_size - position) : -ENODATA);
  }
  int bytes = 0;
  if (ioctl(fd, FIONREAD, &bytes) < 0) return number(env, -errno);
  if (bytes > 0) return number(env, bytes);
  // Nothing now: at its end (a pipe whose writers are gone), or not yet.
  struct pollfd ready = {.fd = fd, .events = POLLIN};
  if (poll(&ready, 1, 0) == 1 && (ready.revents & POLLHUP) && !(ready.revents & POLLIN)) return number(env, -ENODATA);
  return number(env, 0);
}

typedef struct {
  napi_async_work work;
  napi_ref callback;
  napi_ref progress_ref;
  // progress[0]: bytes moved so far by this job, stored after each splice(2) for the event loop to read.
  volatile double* progress;
  int fd_in;
  int fd_out;
  int64_t bytes;
  int64_t moved;
  int eof;
  int error;
} splice_job;


// In the thread pool: moves `bytes` (or up to the end of the input) with splice(2).
static void splice_execute(napi_env env, void* data) {
  (void)env;
  splice_job* job = data;
  while (job->moved < job->bytes) {
    int64_t left = job->bytes - job->moved;
    size_t ask = left > INT_MAX ? INT_MAX : (size_t)left;
    ssize_t moved = splice(job->fd_in, NULL, job->fd_out, NULL, ask, SPLICE_F_MOVE | SPLICE_F_MORE);
    if (moved > 0) {
      job->moved += moved;
      if (job->progress != NULL) *job->progress = (double)job->moved;
    } else if (moved == 0) {
      job->eof = 1;
      return;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN) {
      // A descriptor some other program made non-blocking: wait for the side that is not ready
      // (the output if it is full, else the input), never spinning on the one that is.
      struct pollfd out = {.fd = job->fd_out, .events = POLLOUT};
      struct pollfd in = {.fd = job->fd_in, .events = POLLIN};
      if (poll(&out, 1, 0) == 1 && (out.revents & POLLOUT)) poll(&in, 1, 100);
      else poll(&out, 1, 100);
    } else {
      job->error = errno;
      return;
    }
  }
}

static void splice_complete(napi_env env, napi_status status, void* data) {
  splice_job* job = data;
  napi_value callback, global, argv[3];
  if (napi_get_reference_value(env, job->callback, &callback) == napi_ok && napi_get_global(env, &global) == napi_ok) {
    int error = status == napi_ok ? job->error : ECANCELED;
    napi_create_int32(env, -error, &argv[0]);
    napi_create_double(env, (double)job->moved, &argv[1]);
    napi_get_boolean(env, job->eof, &argv[2]);
    napi_call_function(env, global, callback, 3, argv, NULL);
  }
  napi_delete_reference(env, job->callback);
  if (job->progress_ref != NULL) napi_delete_reference(env, job->progress_ref);
  napi_delete_async_work(env, job->work);
  free(job);
}

// splice(fdIn, fdOut, bytes, progress, callback(negErrno, moved, eof)): moves `bytes` from fdIn
// to fdOut in the kernel, or fewer if the input ends first; one side must be a pipe. progress, a
// Float64Array, holds what has moved so far while the job runs.
static napi_value splice_async(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5], name;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  splice_job* job = calloc(1, sizeof *job);
  if (job == NULL) {
    napi_throw_error(env, NULL, "out of memory");
    return NULL;
  }
  job->fd_in = int_arg(env, argv[0], -1);
  job->fd_out = int_arg(env, argv[1], -1);
  double bytes = 0;
  napi_get_value_double(env, argv[2], &bytes);
  job->bytes = bytes > (double)INT64_MAX ? INT64_MAX : (int64_t)bytes;
  napi_typedarray_type type;
  size_t length = 0;
  void* data = NULL;
  if (napi_get_typedarray_info(env, argv[3], &type, &length, &data, NULL, NULL) == napi_ok && type == napi_float64_array && length >= 1 &&
      napi_create_reference(env, argv[3], 1, &job->progress_ref) == napi_ok) {
    job->progress = data;
  }
  if (napi_create_reference(env, argv[4], 1, &job->callback) != napi_ok ||
      napi_create_string_utf8(env, "tbucket:splice", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, splice_execute, splice_complete, job, &job->work) != napi_ok ||
      napi_queue_async_work(env, job->work) != napi_ok) {
    free(job);
    napi_throw_error(env, NULL, "cannot queue a splice");
    return NULL;
  }
  return NULL;
}

// spliceNow(fdIn, fdOut, bytes): on the calling thread, moves up to `bytes` without waiting
// (SPLICE_F_NONBLOCK: a pipe that is empty or full stops it). Returns [moved, negErrno, eof];
// negErrno is -EAGAIN when it stopped because a pipe would have blocked.
static napi_value splice_now(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], result, value;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int fd_in = int_arg(env, argv[0], -1);
  int fd_out = int_arg(env, argv[1], -1);
  double bytes = 0;
  napi_get_value_double(env, argv[2], &bytes);
  int64_t want = bytes > (double)INT64_MAX ? INT64_MAX : (int64_t)bytes;
  int64_t moved = 0;
  int error = 0, eof = 0;
  while (moved < want) {
    int64_t left = want - moved;
    ssize_t step = splice(fd_in, NULL, fd_out, NULL, left > INT_MAX ? INT_MAX : (size_t)left, SPLICE_F_MOVE | SPLICE_F_MORE | SPLICE_F_NONBLOCK);
    if (step > 0) {
      moved += step;
    } else if (step == 0) {
      eof = 1;
      break;
    } else if (errno != EINTR) {
      error = errno;
      break;
    }
  }
  CHECK(napi_create_array_with_length(env, 3, &result));
  CHECK(napi_create_double(env, (double)moved, &value));
  CHECK(napi_set_element(env, result, 0, value));
  CHECK(napi_create_int32(env, -error, &value));
  CHECK(napi_set_element(env, result, 1, value));
  CHECK(napi_get_boolean(env, eof, &value));
  CHECK(napi_set_element(env, result, 2, value));
  return result;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor properties[] = {
      {"pipeSize", NULL, pipe_size, NULL, NULL, NULL, napi_enumerable, NULL},
      {"setPipeSize", NULL, set_pipe_size, NULL, NULL, NULL, napi_enumerable, NULL},
      {"splice", NULL, splice_async, NULL, NULL, NULL, napi_enumerable, NULL},
      {"spliceNow", NULL, splice_now, NULL, NULL, NULL, napi_enumerable, NULL},
      {"bytesReadable", NULL, bytes_readable, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  CHECK(napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties));
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
