//go:build highs_native

/* Host side of the native HiGHS engine: the ~20 emscripten/WASI imports of
 * the pinned highs.wasm (the same ones host.go implements for wazero) and a
 * trap-safe call into its exports. wasm2c's runtime ends a trapping call with
 * longjmp; this file owns the setjmp side, per thread, so instances can run
 * on many threads at once. Everything HiGHS asks of the host is answered
 * here in C except what needs Go state (log output and the in-memory files
 * of Highs_readModel), which calls back into native.go. */

#define _GNU_SOURCE /* pthread_getattr_np */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "native_glue.h"
#include "_cgo_export.h"

/* Defined in highs_main.c by w2cgen: the sha256 of the wasm the C came from,
 * and whether memory is checked with guard pages (w2cgen -guard-pages). */
extern const char highs_w2c_wasm_sha256[];
extern const int highs_w2c_guard_pages;

/* GUARD_RESERVE is what wasm-rt reserves per memory in guard-page mode. */
#define GUARD_RESERVE 0x200000000ul

/* Stack guard read by the generated code's function prologue (see w2cgen's
 * prelude): the lowest stack address a generated function may start at. */
__thread uintptr_t highs_w2c_stack_floor;

/* stackMargin is what stays free below the floor: room for the frames of a
 * host import, a cgo callback into Go and libc. Generated frames are at most
 * ~1-2 KiB (gcc -fstack-usage on the parts). */
#define STACK_MARGIN (256 * 1024)

static __thread sigjmp_buf* cur_jmp;
static __thread highs_w2c_inst* cur_inst;
static __thread uintptr_t stack_lo;

/* Called by wasm-rt (WASM_RT_TRAP_HANDLER, see w2cgen) and by the imports. */
__attribute__((noreturn)) void highs_w2c_trap(int code) {
  if (cur_jmp == NULL) {
    /* A trap outside highs_w2c_call cannot happen; if it did, unwinding
     * would corrupt the Go stack. */
    fprintf(stderr, "highs native: trap %d outside a guarded call\n", code);
    abort();
  }
  siglongjmp(*cur_jmp, code);
}

static void set_stack_floor(void) {
  if (stack_lo == 0) {
    pthread_attr_t a;
    void* addr = NULL;
    size_t size = 0;
    stack_lo = 1; /* unknown: no guard rather than a wrong one */
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
      if (pthread_attr_getstack(&a, &addr, &size) == 0 && size > 2 * STACK_MARGIN) {
        stack_lo = (uintptr_t)addr;
      }
      pthread_attr_destroy(&a);
    }
  }
  highs_w2c_stack_floor = stack_lo > 1 ? stack_lo + STACK_MARGIN : 0;
}

static inline wasm_rt_memory_t* mem(highs_w2c_inst* in) {
  return Z_highsZ_u(&in->mod);
}

static inline int in_bounds(highs_w2c_inst* in, uint64_t off, uint64_t n) {
  return off + n <= mem(in)->size;
}

static inline int load32(highs_w2c_inst* in, uint32_t off, uint32_t* v) {
  if (!in_bounds(in, off, 4)) return 0;
  memcpy(v, mem(in)->data + off, 4);
  return 1;
}

static inline int store32(highs_w2c_inst* in, uint32_t off, uint32_t v) {
  if (!in_bounds(in, off, 4)) return 0;
  memcpy(mem(in)->data + off, &v, 4);
  return 1;
}

static inline int store64(highs_w2c_inst* in, uint32_t off, uint64_t v) {
  if (!in_bounds(in, off, 8)) return 0;
  memcpy(mem(in)->data + off, &v, 8);
  return 1;
}

/* cstring copies the NUL-terminated string at off (at most max-1 bytes). */
static void cstring(highs_w2c_inst* in, uint32_t off, char* dst, size_t max) {
  size_t i = 0;
  wasm_rt_memory_t* m = mem(in);
  if (off != 0) {
    for (; i + 1 < max && (uint64_t)off + i < m->size; i++) {
      char c = (char)m->data[off + i];
      if (c == 0) break;
      dst[i] = c;
    }
  }
  dst[i] = 0;
}

static inline void check_canceled(highs_w2c_inst* in) {
  if (__atomic_load_n(&in->cancel, __ATOMIC_RELAXED)) {
    highs_w2c_trap(HW_TRAP_CANCELED);
  }
}

__attribute__((noreturn)) static void abort_with(highs_w2c_inst* in, const char* reason) {
  snprintf(in->reason, sizeof in->reason, "%s", reason);
  highs_w2c_trap(HW_TRAP_ABORT);
}

static double clock_ms(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* WASI errno values, as in host.go. */
enum { E_SUCCESS = 0, E_ACCES = 2, E_BADF = 8, E_INVAL = 28, E_NOENT = 44, E_NOTTY = 59, E_SPIPE = 70 };

static u32 ok_errno(int ok) { return ok ? E_SUCCESS : E_INVAL; }

/* ---- imports (module "a"; names as in abi.go) ---- */

/* a: ___cxa_throw(ptr, type, destructor). The mangled type name (e.g.
 * "St9bad_alloc") follows the type_info vtable pointer. */
void Z_aZ_a(highs_w2c_inst* in, u32 ptr, u32 type, u32 dtor) {
  (void)ptr;
  (void)dtor;
  char name[128], reason[160];
  uint32_t name_ptr;
  name[0] = 0;
  if (load32(in, type + 4, &name_ptr)) cstring(in, name_ptr, name, sizeof name);
  snprintf(reason, sizeof reason, "uncaught C++ exception%s%s", name[0] ? " " : "", name);
  abort_with(in, reason);
}

/* b: _exit(status) */
void Z_aZ_b(highs_w2c_inst* in, u32 status) {
  char reason[32];
  snprintf(reason, sizeof reason, "exit(%d)", (int32_t)status);
  abort_with(in, reason);
}

/* c: _emscripten_get_now() ms, monotonic */
f64 Z_aZ_c(highs_w2c_inst* in) {
  check_canceled(in);
  return clock_ms(CLOCK_MONOTONIC);
}

/* d: _fd_close(fd) */
u32 Z_aZ_d(highs_w2c_inst* in, u32 fd) {
  return fd > 2 ? highsW2CClose(in->handle, fd) : E_SUCCESS;
}

/* e: ___syscall_fcntl64(fd, cmd, varargs). fcntl and ioctl on the standard
 * streams succeed so that musl line-buffers stdout (see host.go). */
u32 Z_aZ_e(highs_w2c_inst* in, u32 fd, u32 cmd, u32 va) {
  (void)cmd;
  (void)va;
  if (fd > 2 && !highsW2CIsOpen(in->handle, fd)) return (u32)-E_BADF;
  return 0;
}

/* f: _fd_write(fd, iov, iovcnt, pnum) */
u32 Z_aZ_f(highs_w2c_inst* in, u32 fd, u32 iov, u32 iovcnt, u32 pnum) {
  check_canceled(in);
  if (fd != 1 && fd != 2) return E_BADF;
  uint32_t total = 0;
  for (uint32_t i = 0; i < iovcnt; i++) {
    uint32_t ptr, n;
    if (!load32(in, iov + 8 * i, &ptr) || !load32(in, iov + 8 * i + 4, &n) || !in_bounds(in, ptr, n)) {
      return E_INVAL;
    }
    if (n > 0 && highsW2CWrite(in->handle, (char*)mem(in)->data + ptr, n) != 0) {
      highs_w2c_trap(HW_TRAP_CALLBACK);
    }
    total += n;
  }
  return ok_errno(store32(in, pnum, total));
}

/* g: _fd_read(fd, iov, iovcnt, pnum) */
u32 Z_aZ_g(highs_w2c_inst* in, u32 fd, u32 iov, u32 iovcnt, u32 pnum) {
  if (fd == 0) return ok_errno(store32(in, pnum, 0)); /* stdin is at EOF */
  if (!highsW2CIsOpen(in->handle, fd)) return E_BADF;
  uint32_t total = 0;
  for (uint32_t i = 0; i < iovcnt; i++) {
    uint32_t ptr, n;
    if (!load32(in, iov + 8 * i, &ptr) || !load32(in, iov + 8 * i + 4, &n) || !in_bounds(in, ptr, n)) {
      return E_INVAL;
    }
    uint32_t k = n > 0 ? highsW2CRead(in->handle, fd, (char*)mem(in)->data + ptr, n) : 0;
    total += k;
    if (k < n) break;
  }
  return ok_errno(store32(in, pnum, total));
}

/* h: ___syscall_ioctl(fd, op, varargs) */
u32 Z_aZ_h(highs_w2c_inst* in, u32 fd, u32 op, u32 va) {
  (void)op;
  (void)va;
  if (fd <= 2) return 0;
  return highsW2CIsOpen(in->handle, fd) ? (u32)-E_NOTTY : (u32)-E_BADF;
}

/* i: ___syscall_openat(dirfd, path, flags, varargs): only memFS files. */
u32 Z_aZ_i(highs_w2c_inst* in, u32 dirfd, u32 path, u32 flags, u32 va) {
  (void)dirfd;
  (void)va;
  char p[4096];
  cstring(in, path, p, sizeof p);
  return (u32)highsW2COpen(in->handle, p, flags);
}

/* j: _emscripten_date_now() ms since the epoch */
f64 Z_aZ_j(highs_w2c_inst* in) {
  check_canceled(in);
  return clock_ms(CLOCK_REALTIME);
}

/* k: __abort_js() */
void Z_aZ_k(highs_w2c_inst* in) { abort_with(in, "abort()"); }

/* l: __setitimer_js(which, timeout_ms): alarm() is never relied on. */
u32 Z_aZ_l(highs_w2c_inst* in, u32 which, f64 ms) {
  (void)in;
  (void)which;
  (void)ms;
  return 0;
}

/* m: __tzset_js(timezone, daylight, std_name, dst_name): UTC. */
void Z_aZ_m(highs_w2c_inst* in, u32 tz, u32 daylight, u32 std_name, u32 dst_name) {
  store32(in, tz, 0);
  store32(in, daylight, 0);
  if (in_bounds(in, std_name, 4)) memcpy(mem(in)->data + std_name, "UTC", 4);
  if (in_bounds(in, dst_name, 4)) memcpy(mem(in)->data + dst_name, "UTC", 4);
}

/* n: _environ_sizes_get(pcount, pbufsize): an empty environment. */
u32 Z_aZ_n(highs_w2c_inst* in, u32 pcount, u32 pbufsize) {
  return ok_errno(store32(in, pcount, 0) && store32(in, pbufsize, 0));
}

/* o: _environ_get(environ, buf) */
u32 Z_aZ_o(highs_w2c_inst* in, u32 environ, u32 buf) {
  (void)in;
  (void)environ;
  (void)buf;
  return E_SUCCESS;
}

/* p: _clock_time_get(clk, precision, ptime) */
u32 Z_aZ_p(highs_w2c_inst* in, u32 clk, u64 precision, u32 ptime) {
  (void)precision;
  check_canceled(in);
  struct timespec ts;
  switch (clk) {
    case 0: /* CLOCK_REALTIME */
      clock_gettime(CLOCK_REALTIME, &ts);
      break;
    case 1: /* monotonic and CPU-time clocks */
    case 2:
    case 3:
      clock_gettime(CLOCK_MONOTONIC, &ts);
      break;
    default:
      return E_INVAL;
  }
  return ok_errno(store64(in, ptime, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec));
}

/* q: _emscripten_resize_heap(requested): grow to at least requested bytes,
 * over-allocating like emscripten's JS and host.go (+20%, capped at
 * +96 MiB), with smaller steps when memory is short. */
u32 Z_aZ_q(highs_w2c_inst* in, u32 requested) {
  check_canceled(in);
  wasm_rt_memory_t* m = mem(in);
  const uint64_t page = 65536;
  uint64_t req = requested, old = m->size;
  uint64_t max_size = (uint64_t)(m->max_pages ? m->max_pages : 65536) * page;
  if (max_size > ((uint64_t)65536 * page) - page) max_size = (uint64_t)65535 * page; /* size is a u32 */
  if (req > max_size) return 0;
  for (uint64_t cut = 1; cut <= 4; cut *= 2) {
    uint64_t want = old + old / (5 * cut);
    if (want > req + (96u << 20)) want = req + (96u << 20);
    if (want < req) want = req;
    want = (want + page - 1) / page * page;
    if (want > max_size) want = max_size;
    if (want <= old) return 1;
    if (wasm_rt_grow_memory(m, (uint32_t)((want - old) / page)) != UINT32_MAX) return 1;
  }
  return 0;
}

/* r: _proc_exit(code) */
void Z_aZ_r(highs_w2c_inst* in, u32 code) { Z_aZ_b(in, code); }

/* s: __emscripten_runtime_keepalive_clear() */
void Z_aZ_s(highs_w2c_inst* in) { (void)in; }

/* t: _fd_seek(fd, offset, whence, pnewoffset) */
u32 Z_aZ_t(highs_w2c_inst* in, u32 fd, u64 off, u32 whence, u32 pnew) {
  if (fd <= 2) return E_SPIPE; /* the standard streams are ttys */
  int64_t pos = 0;
  u32 e = highsW2CSeek(in->handle, fd, (int64_t)off, whence, &pos);
  if (e != E_SUCCESS) return e;
  return ok_errno(store64(in, pnew, (uint64_t)pos));
}

/* ---- the Go side's entry points ---- */

static int install_guard_fault(void);
static int reservation_ok(void);

const char* highs_w2c_init(void) {
  wasm_rt_init();
  Z_highs_init_module();
  if (highs_w2c_guard_pages && install_guard_fault() != 0) {
    /* sigaction fails only on an invalid signal or action. */
    abort();
  }
  return highs_w2c_wasm_sha256;
}

int highs_w2c_usable(void) { return !highs_w2c_guard_pages || reservation_ok(); }

int highs_w2c_guarded(void) { return highs_w2c_guard_pages; }

wasm_rt_memory_t* highs_w2c_memory(highs_w2c_inst* in) { return mem(in); }

void highs_w2c_cancel(highs_w2c_inst* in) { __atomic_store_n(&in->cancel, 1, __ATOMIC_RELAXED); }

void highs_w2c_uncancel(highs_w2c_inst* in) { __atomic_store_n(&in->cancel, 0, __ATOMIC_RELAXED); }

static inline f64 f64_of(uint64_t bits) {
  f64 v;
  memcpy(&v, &bits, 8);
  return v;
}

static inline uint64_t bits_of(f64 v) {
  uint64_t b;
  memcpy(&b, &v, 8);
  return b;
}

/* dispatch calls export fn; fn < 0 instantiates. */
static void dispatch(highs_w2c_inst* in, int fn, const uint64_t* a, uint64_t* res) {
  Z_highs_instance_t* m = &in->mod;
#define U(i) ((u32)a[i])
#define F(i) f64_of(a[i])
  switch (fn) {
    case -1: Z_highs_instantiate(m, in); break;
    case HW_CTORS: Z_highsZ_v(m); break;
    case HW_CREATE: res[0] = Z_highsZ_F(m); break;
    case HW_DESTROY: Z_highsZ_G(m, U(0)); break;
    case HW_VERSION: res[0] = Z_highsZ_H(m); break;
    case HW_RUN: res[0] = Z_highsZ_N(m, U(0)); break;
    case HW_READ_MODEL: res[0] = Z_highsZ_P(m, U(0), U(1)); break;
    case HW_PASS_LP:
      res[0] = Z_highsZ_U(m, U(0), U(1), U(2), U(3), U(4), U(5), F(6), U(7), U(8), U(9), U(10), U(11), U(12),
                          U(13), U(14));
      break;
    case HW_PASS_MIP:
      res[0] = Z_highsZ_V(m, U(0), U(1), U(2), U(3), U(4), U(5), F(6), U(7), U(8), U(9), U(10), U(11), U(12),
                          U(13), U(14), U(15));
      break;
    case HW_SET_BOOL: res[0] = Z_highsZ_ia(m, U(0), U(1), U(2)); break;
    case HW_SET_INT: res[0] = Z_highsZ_ja(m, U(0), U(1), U(2)); break;
    case HW_SET_DOUBLE: res[0] = Z_highsZ_ka(m, U(0), U(1), F(2)); break;
    case HW_SET_STRING: res[0] = Z_highsZ_la(m, U(0), U(1), U(2)); break;
    case HW_GET_INT_INFO: res[0] = Z_highsZ_Aa(m, U(0), U(1), U(2)); break;
    case HW_GET_DOUBLE_INFO: res[0] = Z_highsZ_Ba(m, U(0), U(1), U(2)); break;
    case HW_GET_INT64_INFO: res[0] = Z_highsZ_Ca(m, U(0), U(1), U(2)); break;
    case HW_GET_SOLUTION: res[0] = Z_highsZ_Ea(m, U(0), U(1), U(2), U(3), U(4)); break;
    case HW_GET_MODEL_STATUS: res[0] = Z_highsZ_Ga(m, U(0)); break;
    case HW_GET_OBJECTIVE: res[0] = bits_of(Z_highsZ_Ka(m, U(0))); break;
    case HW_SET_SOLUTION: res[0] = Z_highsZ_Va(m, U(0), U(1), U(2), U(3), U(4)); break;
    case HW_SIZEOF_HIGHSINT: res[0] = Z_highsZ_Yb(m, U(0)); break;
    case HW_FREE: Z_highsZ_tc(m, U(0)); break;
    case HW_MALLOC: res[0] = Z_highsZ_uc(m, U(0)); break;
    default: abort_with(in, "unknown export");
  }
#undef U
#undef F
}

int highs_w2c_call(highs_w2c_inst* in, int fn, const uint64_t* args, uint64_t* res) {
  sigjmp_buf jb;
  sigjmp_buf* saved = cur_jmp;
  highs_w2c_inst* saved_inst = cur_inst;
  set_stack_floor();
  /* With guard pages a trap can leave guard_fault, which runs with SIGSEGV
   * blocked: the jump must restore the signal mask. */
  int code = sigsetjmp(jb, highs_w2c_guard_pages);
  if (code != 0) {
    cur_jmp = saved;
    cur_inst = saved_inst;
    return code;
  }
  cur_jmp = &jb;
  cur_inst = in;
  dispatch(in, fn, args, res);
  cur_jmp = saved;
  cur_inst = saved_inst;
  return 0;
}

/* ---- guard pages (w2cgen -guard-pages) ----
 *
 * In guard-page mode the generated code checks no access: an out-of-bounds
 * one lands in the instance's 8 GiB reservation, on a page without access,
 * and faults. guard_fault turns such a fault into a WASM_RT_TRAP_OOB trap of
 * the call running on this thread, which the caller reports as an error like
 * any trap. Every other SIGSEGV (a nil dereference in Go code, which the Go
 * runtime turns into a panic, or a crash in C) goes to the handler installed
 * before, the Go runtime's, as if this one were not there: it runs on the
 * same signal stack (SA_ONSTACK), with the same arguments. */
static struct sigaction prev_segv;

static void guard_fault(int sig, siginfo_t* si, void* uc) {
  highs_w2c_inst* in = cur_inst;
  if (cur_jmp != NULL && in != NULL) {
    uint8_t* base = mem(in)->data;
    uint8_t* addr = (uint8_t*)si->si_addr;
    if (base != NULL && addr >= base && addr < base + GUARD_RESERVE) {
      siglongjmp(*cur_jmp, WASM_RT_TRAP_OOB);
    }
  }
  if (prev_segv.sa_flags & SA_SIGINFO) {
    prev_segv.sa_sigaction(sig, si, uc);
  } else if (prev_segv.sa_handler == SIG_DFL) {
    /* Restore the default and return: the access faults again and the
     * default action ends the process, as without this handler. */
    signal(sig, SIG_DFL);
  } else if (prev_segv.sa_handler != SIG_IGN) {
    prev_segv.sa_handler(sig);
  }
}

/* install_guard_fault puts guard_fault in front of the current SIGSEGV
 * handler; it returns 0 or an errno-style failure. */
static int install_guard_fault(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = guard_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigfillset(&sa.sa_mask);
  return sigaction(SIGSEGV, &sa, &prev_segv);
}

/* reservation_ok checks that an 8 GiB reservation can be made (a ulimit -v
 * below it makes wasm-rt's own attempt abort the process). */
static int reservation_ok(void) {
  void* p = mmap(NULL, GUARD_RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return 0;
  munmap(p, GUARD_RESERVE);
  return 1;
}

highs_w2c_inst* highs_w2c_new(uintptr_t handle, int* trap) {
  highs_w2c_inst* in = calloc(1, sizeof *in);
  if (in == NULL) {
    *trap = WASM_RT_TRAP_EXHAUSTION;
    return NULL;
  }
  in->handle = handle;
  if (highs_w2c_guard_pages && !reservation_ok()) {
    *trap = HW_TRAP_RESERVE;
    free(in);
    return NULL;
  }
  *trap = highs_w2c_call(in, -1, NULL, NULL);
  if (*trap != 0 || mem(in)->data == NULL) {
    if (*trap == 0) *trap = WASM_RT_TRAP_EXHAUSTION;
    highs_w2c_delete(in);
    return NULL;
  }
  return in;
}

void highs_w2c_delete(highs_w2c_inst* in) {
  wasm_rt_memory_t* m = mem(in);
  uint8_t* data = m->data;
  uint64_t size = m->size;
  Z_highs_free(&in->mod);
  if (highs_w2c_guard_pages && data != NULL && size < GUARD_RESERVE) {
    /* wasm-rt 1.0.32 unmaps only the used size, which would leak the rest
     * of the reservation's address space per instance. */
    munmap(data + size, GUARD_RESERVE - size);
  }
  free(in);
}

const char* highs_w2c_strerror(int trap) {
  switch (trap) {
    case HW_TRAP_ABORT: return "aborted";
    case HW_TRAP_CANCELED: return "canceled";
    case HW_TRAP_CALLBACK: return "log writer panicked";
    case HW_TRAP_RESERVE:
      return "cannot reserve the 8 GiB of address space a guard-page instance needs (ulimit -v?)";
    default: return wasm_rt_strerror((wasm_rt_trap_t)trap);
  }
}
