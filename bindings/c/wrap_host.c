/*
 * wrap_host.c: a C11 host of the assay C ABI, and a test (tests/c_abi.rs builds and runs it).
 *
 * It runs one MCP session in process: assay_wrap_session on its own thread, reading from and
 * writing to two pipes, while the main thread plays the MCP client (initialize, an allowed
 * tools/call, a denied tools/call). Then it reads the capture back, packages it, breaks the
 * packaged copy and reads that, and checks the error statuses of bad arguments.
 *
 * usage: wrap_host CAPTURE_DIR BROKEN_DIR POLICY SERVER_SCRIPT
 *   CAPTURE_DIR    capture directory for the session (may exist, must hold no capture files)
 *   BROKEN_DIR     must not exist: the capture is packaged there, then its stop file truncated
 *   POLICY         the demo policy (examples/demo/policy.yaml)
 *   SERVER_SCRIPT  the demo server (examples/demo/server.py), run with python3
 *
 * Exit status 0 only when every check passed. Every string the library returns is freed.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "assay.h"

static int failures = 0;

/* A non-NULL value that outputs must be reset from. */
static char sentinel[] = "not reset";

static void check(int ok, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s: ", ok ? "check ok" : "CHECK FAILED");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  if (!ok) {
    failures++;
  }
}

static const char *closure_name(AssayClosure c) {
  switch (c) {
  case ASSAY_CLOSURE_CLOSED:
    return "closed";
  case ASSAY_CLOSURE_INCOMPLETE:
    return "incomplete";
  case ASSAY_CLOSURE_UNKNOWN:
    return "unknown";
  default:
    return "?";
  }
}

/* A growable string, for building config_json. */
struct buf {
  char *data;
  size_t len, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = (b->cap ? b->cap * 2 : 256);
    while (cap < b->len + n + 1) {
      cap *= 2;
    }
    char *data = realloc(b->data, cap);
    if (data == NULL) {
      perror("realloc");
      exit(70);
    }
    b->data = data;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

static void buf_raw(struct buf *b, const char *s) { buf_add(b, s, strlen(s)); }

/* Appends s as a JSON string literal. */
static void buf_json_str(struct buf *b, const char *s) {
  buf_raw(b, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    char esc[8];
    if (c == '"' || c == '\\') {
      esc[0] = '\\';
      esc[1] = (char)c;
      buf_add(b, esc, 2);
    } else if (c < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", c);
      buf_raw(b, esc);
    } else {
      buf_add(b, (const char *)&c, 1);
    }
  }
  buf_raw(b, "\"");
}

/* Calls assay_wrap_session with a config that must fail before anything runs. */
static void expect_wrap_status(const char *what, const char *config, AssayStatus want) {
  char *outcome = sentinel; /* must become NULL */
  AssayStatus got = assay_wrap_session(config, &outcome);
  const char *err = assay_last_error();
  check(got == want && outcome == NULL && err != NULL && err[0] != '\0',
        "%s -> status %u (want %u), outcome %s, last error: %s", what, (unsigned)got,
        (unsigned)want, outcome == NULL ? "NULL" : "SET", err ? err : "(null)");
  assay_string_free(outcome == sentinel ? NULL : outcome);
}

static int cloexec_pipe(int fds[2]) {
  if (pipe(fds) != 0) {
    return -1;
  }
  /* Hygiene only: the library never lets the server inherit our descriptors, close-on-exec or
   * not (tests/fixtures/plain_pipe_host.c uses plain pipe(2)). */
  for (int i = 0; i < 2; i++) {
    if (fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0) {
      return -1;
    }
  }
  return 0;
}

static int write_all(int fd, const char *s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = write(fd, s, n);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -1;
    }
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

struct session {
  const char *config;
  AssayStatus status;
  char *outcome;
  char last_error[512];
};

static void *run_session(void *arg) {
  struct session *s = arg;
  s->status = assay_wrap_session(s->config, &s->outcome);
  const char *err = assay_last_error(); /* thread-local: read it on this thread */
  snprintf(s->last_error, sizeof s->last_error, "%s", err ? err : "");
  return NULL;
}

/* Reads from fd until `want` complete lines arrived (30 s limit). Returns the bytes read. */
static char *read_lines(int fd, int want) {
  struct buf b = {0};
  int lines = 0;
  while (lines < want) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, 30000);
    if (r <= 0) {
      fprintf(stderr, "wrap_host: timed out waiting for responses\n");
      break;
    }
    char chunk[4096];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n <= 0) {
      break;
    }
    for (ssize_t i = 0; i < n; i++) {
      lines += chunk[i] == '\n';
    }
    buf_add(&b, chunk, (size_t)n);
  }
  if (b.data == NULL) {
    buf_raw(&b, "");
  }
  return b.data;
}

/* The response line with the given JSON-RPC id (a number), copied, or NULL. */
static char *response_line(const char *all, int id) {
  char needle[32];
  snprintf(needle, sizeof needle, "\"id\":%d,", id);
  const char *line = all;
  while (*line) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char *copy = malloc(len + 1);
    if (copy == NULL) {
      exit(70);
    }
    memcpy(copy, line, len);
    copy[len] = '\0';
    if (strstr(copy, needle) != NULL) {
      return copy;
    }
    free(copy);
    line += len + (end ? 1 : 0);
  }
  return NULL;
}

/* Replaces path with the first half of its bytes. */
static int truncate_half(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    return -1;
  }
  char data[65536];
  size_t n = fread(data, 1, sizeof data, f);
  fclose(f);
  f = fopen(path, "wb");
  if (f == NULL) {
    return -1;
  }
  size_t half = n / 2;
  int ok = fwrite(data, 1, half, f) == half;
  return (fclose(f) == 0 && ok) ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: wrap_host CAPTURE_DIR BROKEN_DIR POLICY SERVER_SCRIPT\n");
    return 2;
  }
  const char *capture_dir = argv[1], *broken_dir = argv[2], *policy = argv[3],
             *server = argv[4];
  setvbuf(stdout, NULL, _IOLBF, 0);

  /* 1. Versions. */
  printf("abi: %u\nversion: %s\n", (unsigned)assay_abi_version(), assay_version());
  check(assay_abi_version() == ASSAY_ABI_VERSION, "assay_abi_version() == ASSAY_ABI_VERSION");
  check(strcmp(assay_version(), ASSAY_VERSION) == 0, "assay_version() == ASSAY_VERSION");

  /* 2. Bad arguments fail with the documented status, a message, and NULL outputs. */
  expect_wrap_status("NULL config_json", NULL, ASSAY_ERR_INVALID_ARGUMENT);
  expect_wrap_status("config_json \"{\"", "{", ASSAY_ERR_INVALID_ARGUMENT);
  expect_wrap_status("unknown key", "{\"command\":[\"true\"],\"policy\":\"p.yaml\",\"bogus\":1}",
                     ASSAY_ERR_INVALID_ARGUMENT);
  expect_wrap_status("duplicate key",
                     "{\"command\":[\"true\"],\"policy\":\"p.yaml\",\"policy\":\"q.yaml\"}",
                     ASSAY_ERR_INVALID_ARGUMENT);

  struct buf cfg = {0};
  buf_raw(&cfg, "{\"command\":[\"true\"],\"policy\":\"/nonexistent/assay-policy.yaml\"}");
  expect_wrap_status("missing policy file", cfg.data, ASSAY_ERR_CONFIG);

  cfg.len = 0;
  buf_raw(&cfg, "{\"command\":[\"true\"],\"policy\":");
  buf_json_str(&cfg, policy);
  buf_raw(&cfg, ",\"event_source\":\"not a uri\"}");
  expect_wrap_status("bad event_source", cfg.data, ASSAY_ERR_CONFIG);

  cfg.len = 0;
  buf_raw(&cfg, "{\"command\":[\"true\"],\"policy\":");
  buf_json_str(&cfg, policy);
  buf_raw(&cfg, ",\"stdin\":-5}");
  expect_wrap_status("negative stdin", cfg.data, ASSAY_ERR_INVALID_ARGUMENT);

  {
    AssayClosure c = ASSAY_CLOSURE_CLOSED;
    char *v = sentinel;
    AssayStatus st = assay_read_capture(NULL, &c, &v);
    check(st == ASSAY_ERR_INVALID_ARGUMENT && c == ASSAY_CLOSURE_UNKNOWN && v == NULL,
          "assay_read_capture(NULL dir) -> %u, closure %s", (unsigned)st, closure_name(c));
    st = assay_read_capture(capture_dir, NULL, NULL);
    check(st == ASSAY_ERR_INVALID_ARGUMENT, "assay_read_capture(closure NULL) -> %u",
          (unsigned)st);
    char *m = sentinel;
    st = assay_package_capture(capture_dir, NULL, &m);
    check(st == ASSAY_ERR_INVALID_ARGUMENT && m == NULL, "assay_package_capture(NULL dst) -> %u",
          (unsigned)st);
    const char bad_utf8[] = {'/', 't', 'm', 'p', '/', (char)0xff, '\0'};
    st = assay_read_capture(bad_utf8, &c, NULL);
    check(st == ASSAY_ERR_INVALID_ARGUMENT, "assay_read_capture(non-UTF-8 path) -> %u",
          (unsigned)st);
    st = assay_read_capture("/nonexistent/capture", &c, NULL);
    check(st == ASSAY_OK && c == ASSAY_CLOSURE_UNKNOWN && assay_last_error() == NULL,
          "assay_read_capture(missing dir) -> %u, closure %s, no last error", (unsigned)st,
          closure_name(c));
    assay_string_free(NULL);
  }

  /* 3. One session, in process: the library on a thread, the client on this one. */
  int to_wrapper[2], from_wrapper[2];
  if (cloexec_pipe(to_wrapper) != 0 || cloexec_pipe(from_wrapper) != 0) {
    perror("pipe");
    return 70;
  }
  char fds[64];
  cfg.len = 0;
  buf_raw(&cfg, "{\"command\":[\"python3\",");
  buf_json_str(&cfg, server);
  buf_raw(&cfg, "],\"policy\":");
  buf_json_str(&cfg, policy);
  buf_raw(&cfg, ",\"capture_dir\":");
  buf_json_str(&cfg, capture_dir);
  buf_raw(&cfg, ",\"event_source\":\"assay://c-host\",\"label\":\"c-host-demo\"");
  snprintf(fds, sizeof fds, ",\"stdin\":%d,\"stdout\":%d}", to_wrapper[0], from_wrapper[1]);
  buf_raw(&cfg, fds);

  struct session session = {.config = cfg.data, .status = ASSAY_ERR_PANIC, .outcome = NULL};
  pthread_t thread;
  if (pthread_create(&thread, NULL, run_session, &session) != 0) {
    fprintf(stderr, "pthread_create failed\n");
    return 70;
  }
  const char *requests =
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
      "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"wrap_host\",\"version\":"
      "\"1\"}}}\n"
      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
      "\"arguments\":{\"text\":\"hello from C\"}}}\n"
      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"exec\","
      "\"arguments\":{\"cmd\":\"rm -rf /\"}}}\n";
  check(write_all(to_wrapper[1], requests) == 0, "wrote 3 requests");
  char *responses = read_lines(from_wrapper[0], 3);
  char *r1 = response_line(responses, 1), *r2 = response_line(responses, 2),
       *r3 = response_line(responses, 3);
  check(r1 != NULL && strstr(r1, "\"protocolVersion\"") != NULL, "initialize answered: %s",
        r1 ? r1 : "(none)");
  check(r2 != NULL && strstr(r2, "hello from C") != NULL && strstr(r2, "\"isError\":false"),
        "allowed echo answered by the server: %s", r2 ? r2 : "(none)");
  check(r3 != NULL && strstr(r3, "\"isError\":true") != NULL &&
            strstr(r3, "P_TOOL_DENIED") != NULL,
        "denied exec refused by the wrapper: %s", r3 ? r3 : "(none)");
  free(r1);
  free(r2);
  free(r3);
  free(responses);

  close(to_wrapper[1]); /* EOF: the session ends */
  pthread_join(thread, NULL);
  close(to_wrapper[0]); /* ours: the library closed only its duplicates */
  close(from_wrapper[1]);
  char rest[64];
  check(read(from_wrapper[0], rest, sizeof rest) == 0, "no output after the responses");
  close(from_wrapper[0]);

  check(session.status == ASSAY_OK && session.outcome != NULL,
        "assay_wrap_session -> %u (%s)", (unsigned)session.status, session.last_error);
  printf("outcome: %s\n", session.outcome ? session.outcome : "(null)");
  check(session.outcome && strstr(session.outcome, "\"exit_code\":0") &&
            strstr(session.outcome, "\"stop_written\":true") &&
            strstr(session.outcome, "\"session_end\":\"client_closed\""),
        "outcome: exit_code 0, stop written, client_closed");
  assay_string_free(session.outcome);

  /* 4. Read the capture back. */
  AssayClosure closure = ASSAY_CLOSURE_UNKNOWN;
  char *verdict = NULL;
  AssayStatus st = assay_read_capture(capture_dir, &closure, &verdict);
  check(st == ASSAY_OK && verdict != NULL, "assay_read_capture -> %u", (unsigned)st);
  printf("verdict: %s\n", verdict ? verdict : "(null)");
  printf("closure: %s\n", closure_name(closure));
  check(closure == ASSAY_CLOSURE_CLOSED, "the clean session is closed");
  assay_string_free(verdict);

  /* 5. Package it, then break the copy's stop record: the reader must say unknown. */
  char *manifest = NULL;
  st = assay_package_capture(capture_dir, broken_dir, &manifest);
  check(st == ASSAY_OK && manifest != NULL && strstr(manifest, "assay.capture.package.v1"),
        "assay_package_capture -> %u (%s)", (unsigned)st,
        st == ASSAY_OK ? "ok" : assay_last_error());
  assay_string_free(manifest);
  st = assay_read_capture(broken_dir, &closure, NULL);
  check(st == ASSAY_OK && closure == ASSAY_CLOSURE_CLOSED, "packaged copy is closed too");
  st = assay_package_capture(capture_dir, broken_dir, NULL);
  check(st == ASSAY_ERR_IO && assay_last_error() != NULL,
        "packaging onto an existing directory -> %u: %s", (unsigned)st,
        assay_last_error() ? assay_last_error() : "(null)");

  struct buf stop = {0};
  buf_raw(&stop, broken_dir);
  buf_raw(&stop, "/session-stop.json");
  check(truncate_half(stop.data) == 0, "truncated %s", stop.data);
  free(stop.data);
  verdict = NULL;
  st = assay_read_capture(broken_dir, &closure, &verdict);
  check(st == ASSAY_OK, "assay_read_capture(broken) -> %u", (unsigned)st);
  printf("broken verdict: %s\n", verdict ? verdict : "(null)");
  printf("broken closure: %s\n", closure_name(closure));
  check(closure == ASSAY_CLOSURE_UNKNOWN, "the broken capture is unknown");
  assay_string_free(verdict);

  free(cfg.data);
  if (failures) {
    printf("%d check(s) failed\n", failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}
