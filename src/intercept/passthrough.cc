// Assembly stubs for the pass-through symbols (x86-64 and aarch64). A stub loads its slot and
// tail-jumps, so the caller's arguments, stack and return address reach the driver untouched.
// An empty slot means "not loaded yet": the shared resolver saves every argument register,
// calls SluicePassthroughResolve(index) (which loads the driver), restores them and jumps.
#include "intercept/passthrough.h"

#include <cuda.h>
#include <dlfcn.h>

#include "intercept/hooks.h"

#define SLUICE_PASSTHROUGH(name, index)  // first pass: only SLUICE_PASSTHROUGH_COUNT
#include "passthrough_symbols.inc"
#undef SLUICE_PASSTHROUGH

extern "C" {
__attribute__((visibility("hidden"))) void* sluice_pt_slots[SLUICE_PASSTHROUGH_COUNT];
__attribute__((visibility("hidden"))) void* SluicePassthroughResolve(int index);
}

namespace sluice::intercept {
namespace {

const char* const kNames[] = {
#define SLUICE_PASSTHROUGH(name, index) #name,
#include "passthrough_symbols.inc"
#undef SLUICE_PASSTHROUGH
};

// Stand-ins for stubs whose target is unavailable; they ignore their arguments, which is safe
// for any signature under the C calling conventions.
CUresult ReturnNotFound() {
  return CUDA_ERROR_NOT_FOUND;
}
CUresult ReturnNotInitialized() {
  return CUDA_ERROR_NOT_INITIALIZED;
}

}  // namespace

void ResolvePassthrough(void* driver) {
  for (int i = 0; i < SLUICE_PASSTHROUGH_COUNT; ++i) {
    void* p = dlsym(driver, kNames[i]);
    sluice_pt_slots[i] = p != nullptr ? p : reinterpret_cast<void*>(&ReturnNotFound);
  }
}

const char* const* PassthroughNames(size_t* count) {
  *count = SLUICE_PASSTHROUGH_COUNT;
  return kNames;
}

}  // namespace sluice::intercept

extern "C" void* SluicePassthroughResolve(int index) {
  sluice::intercept::EnsureLoaded();
  void* p = sluice_pt_slots[index];
  return p != nullptr ? p : reinterpret_cast<void*>(&sluice::intercept::ReturnNotInitialized);
}

#define SLUICE_ASM_STR2(x) #x
#define SLUICE_ASM_STR(x) SLUICE_ASM_STR2(x)

#if defined(__x86_64__)
// Entry: rsp = 8 mod 16. push rbp + 7 pushes + 136 bytes leaves rsp 16-aligned for the call.
asm(R"(
  .text
  .p2align 4
  .type sluice_pt_resolve, @function
sluice_pt_resolve:
  pushq %rbp
  movq %rsp, %rbp
  pushq %rdi
  pushq %rsi
  pushq %rdx
  pushq %rcx
  pushq %r8
  pushq %r9
  pushq %rax
  subq $136, %rsp
  movdqu %xmm0, 0(%rsp)
  movdqu %xmm1, 16(%rsp)
  movdqu %xmm2, 32(%rsp)
  movdqu %xmm3, 48(%rsp)
  movdqu %xmm4, 64(%rsp)
  movdqu %xmm5, 80(%rsp)
  movdqu %xmm6, 96(%rsp)
  movdqu %xmm7, 112(%rsp)
  movl %r11d, %edi
  call SluicePassthroughResolve
  movq %rax, %r11
  movdqu 0(%rsp), %xmm0
  movdqu 16(%rsp), %xmm1
  movdqu 32(%rsp), %xmm2
  movdqu 48(%rsp), %xmm3
  movdqu 64(%rsp), %xmm4
  movdqu 80(%rsp), %xmm5
  movdqu 96(%rsp), %xmm6
  movdqu 112(%rsp), %xmm7
  addq $136, %rsp
  popq %rax
  popq %r9
  popq %r8
  popq %rcx
  popq %rdx
  popq %rsi
  popq %rdi
  popq %rbp
  jmpq *%r11
  .size sluice_pt_resolve, .-sluice_pt_resolve
)");
#define SLUICE_PASSTHROUGH(name, index)                              \
  ".globl " #name "\n.type " #name ", @function\n.p2align 4\n" #name \
  ":\n"                                                              \
  "  movq sluice_pt_slots+8*" #index                                 \
  "(%rip), %r11\n"                                                   \
  "  testq %r11, %r11\n  jz 1f\n  jmpq *%r11\n"                      \
  "1:\n  movl $" #index                                              \
  ", %r11d\n  jmp sluice_pt_resolve\n"                               \
  ".size " #name ", .-" #name "\n"
#elif defined(__aarch64__)
// x0-x7 and x8 (indirect result) plus q0-q7 are saved; x16/x17 are the intra-call scratch regs.
asm(R"(
  .text
  .p2align 4
  .type sluice_pt_resolve, %function
sluice_pt_resolve:
  stp x29, x30, [sp, #-224]!
  mov x29, sp
  stp x0, x1, [sp, #16]
  stp x2, x3, [sp, #32]
  stp x4, x5, [sp, #48]
  stp x6, x7, [sp, #64]
  str x8, [sp, #80]
  stp q0, q1, [sp, #96]
  stp q2, q3, [sp, #128]
  stp q4, q5, [sp, #160]
  stp q6, q7, [sp, #192]
  mov w0, w16
  bl SluicePassthroughResolve
  mov x16, x0
  ldp x0, x1, [sp, #16]
  ldp x2, x3, [sp, #32]
  ldp x4, x5, [sp, #48]
  ldp x6, x7, [sp, #64]
  ldr x8, [sp, #80]
  ldp q0, q1, [sp, #96]
  ldp q2, q3, [sp, #128]
  ldp q4, q5, [sp, #160]
  ldp q6, q7, [sp, #192]
  ldp x29, x30, [sp], #224
  br x16
  .size sluice_pt_resolve, .-sluice_pt_resolve
)");
#define SLUICE_PASSTHROUGH(name, index)                              \
  ".globl " #name "\n.type " #name ", %function\n.p2align 4\n" #name \
  ":\n"                                                              \
  "  adrp x16, sluice_pt_slots+8*" #index                            \
  "\n"                                                               \
  "  ldr x16, [x16, #:lo12:sluice_pt_slots+8*" #index                \
  "]\n"                                                              \
  "  cbz x16, 1f\n  br x16\n"                                        \
  "1:\n  mov x16, #" #index                                          \
  "\n  b sluice_pt_resolve\n"                                        \
  ".size " #name ", .-" #name "\n"
#else
#error "libsluice_cuda.so pass-through stubs exist for x86-64 and aarch64 only"
#endif

asm(".text\n"
#include "passthrough_symbols.inc"
);
#undef SLUICE_PASSTHROUGH
