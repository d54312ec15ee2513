// Emulated driver API: streams and events. A stream is its completion time on the device
// timeline; an event records the completion time of the work queued before it; synchronising
// sleeps until that time (CLOCK_MONOTONIC), querying compares it with now.
#include <algorithm>

#include "intercept/emulated/emu_state.h"

namespace emu = sluice::intercept::emu;
using sluice::intercept::MonoNowNs;
using sluice::intercept::SleepUntilNs;

namespace {

// Resolves `stream` in the current context into `*out` (e.mu held by the caller).
CUresult Resolve(emu::Emu& e, CUstream stream, bool ptsz, CUstream_st** out) {
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  *out = emu::ResolveStream(e, ctx, stream, ptsz);
  return *out == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

CUresult StreamSync(CUstream stream, bool ptsz) {
  int64_t done;
  {
    EMU_LOCKED(e);
    CUstream_st* s;
    if (CUresult r = Resolve(e, stream, ptsz, &s); r != CUDA_SUCCESS) return r;
    if (s->capture != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    done = s->last_end_ns;
  }
  SleepUntilNs(done);
  return CUDA_SUCCESS;
}

CUresult StreamQuery(CUstream stream, bool ptsz) {
  EMU_LOCKED(e);
  CUstream_st* s;
  if (CUresult r = Resolve(e, stream, ptsz, &s); r != CUDA_SUCCESS) return r;
  return MonoNowNs() >= s->last_end_ns ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult StreamWaitEvent(CUstream stream, CUevent event, bool ptsz) {
  EMU_LOCKED(e);
  CUstream_st* s;
  if (CUresult r = Resolve(e, stream, ptsz, &s); r != CUDA_SUCCESS) return r;
  if (!e.events.contains(event)) return CUDA_ERROR_INVALID_HANDLE;
  s->last_end_ns = std::max(s->last_end_ns, event->time_ns);  // never-recorded: no wait
  return CUDA_SUCCESS;
}

CUresult EventRecord(CUevent event, CUstream stream, bool ptsz) {
  EMU_LOCKED(e);
  CUstream_st* s;
  if (CUresult r = Resolve(e, stream, ptsz, &s); r != CUDA_SUCCESS) return r;
  if (!e.events.contains(event)) return CUDA_ERROR_INVALID_HANDLE;
  if (s->capture != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  event->time_ns = std::max(MonoNowNs(), emu::StreamReady(e, s));
  return CUDA_SUCCESS;
}

}  // namespace

SLUICE_EMU_API CUresult cuStreamCreateWithPriority(CUstream* out, unsigned flags, int priority) {
  if (out == nullptr || (flags & ~unsigned{CU_STREAM_NON_BLOCKING}) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  EMU_LOCKED(e);
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  auto* s = new CUstream_st;
  s->ctx = ctx;
  s->flags = flags;
  s->priority = std::clamp(priority, -5, 0);
  e.streams.insert(s);
  *out = s;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuStreamCreate(CUstream* out, unsigned flags) {
  return cuStreamCreateWithPriority(out, flags, 0);
}

SLUICE_EMU_API CUresult cuStreamDestroy_v2(CUstream stream) {
  EMU_LOCKED(e);
  if (!e.streams.erase(stream)) return CUDA_ERROR_INVALID_HANDLE;
  delete stream;  // queued work still completes on the device timeline
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = -5;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuStreamSynchronize(CUstream s) { return StreamSync(s, false); }
SLUICE_EMU_API CUresult cuStreamSynchronize_ptsz(CUstream s) { return StreamSync(s, true); }
SLUICE_EMU_API CUresult cuStreamQuery(CUstream s) { return StreamQuery(s, false); }
SLUICE_EMU_API CUresult cuStreamQuery_ptsz(CUstream s) { return StreamQuery(s, true); }
SLUICE_EMU_API CUresult cuStreamWaitEvent(CUstream s, CUevent ev, unsigned) {
  return StreamWaitEvent(s, ev, false);
}
SLUICE_EMU_API CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent ev, unsigned) {
  return StreamWaitEvent(s, ev, true);
}

#define EMU_STREAM_GET(name, ptsz, T, field)                                    \
  SLUICE_EMU_API CUresult name(CUstream stream, T* out) {                       \
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;                        \
    EMU_LOCKED(e);                                                              \
    CUstream_st* s;                                                             \
    if (CUresult r = Resolve(e, stream, ptsz, &s); r != CUDA_SUCCESS) return r; \
    *out = static_cast<T>(s->field);                                            \
    return CUDA_SUCCESS;                                                        \
  }
EMU_STREAM_GET(cuStreamGetPriority, false, int, priority)
EMU_STREAM_GET(cuStreamGetPriority_ptsz, true, int, priority)
EMU_STREAM_GET(cuStreamGetFlags, false, unsigned, flags)
EMU_STREAM_GET(cuStreamGetFlags_ptsz, true, unsigned, flags)
EMU_STREAM_GET(cuStreamGetCtx, false, CUcontext, ctx)
EMU_STREAM_GET(cuStreamGetCtx_ptsz, true, CUcontext, ctx)

SLUICE_EMU_API CUresult cuEventCreate(CUevent* out, unsigned flags) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  CUctx_st* ctx;
  if (CUresult r = emu::CurrentContext(e, &ctx); r != CUDA_SUCCESS) return r;
  auto* ev = new CUevent_st;
  ev->flags = flags;
  e.events.insert(ev);
  *out = ev;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuEventDestroy_v2(CUevent event) {
  EMU_LOCKED(e);
  if (!e.events.erase(event)) return CUDA_ERROR_INVALID_HANDLE;
  delete event;
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuEventRecord(CUevent ev, CUstream s) { return EventRecord(ev, s, false); }
SLUICE_EMU_API CUresult cuEventRecord_ptsz(CUevent ev, CUstream s) {
  return EventRecord(ev, s, true);
}
SLUICE_EMU_API CUresult cuEventRecordWithFlags(CUevent ev, CUstream s, unsigned) {
  return EventRecord(ev, s, false);
}
SLUICE_EMU_API CUresult cuEventRecordWithFlags_ptsz(CUevent ev, CUstream s, unsigned) {
  return EventRecord(ev, s, true);
}

SLUICE_EMU_API CUresult cuEventQuery(CUevent event) {
  EMU_LOCKED(e);
  if (!e.events.contains(event)) return CUDA_ERROR_INVALID_HANDLE;
  return MonoNowNs() >= event->time_ns ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

SLUICE_EMU_API CUresult cuEventSynchronize(CUevent event) {
  int64_t t;
  {
    EMU_LOCKED(e);
    if (!e.events.contains(event)) return CUDA_ERROR_INVALID_HANDLE;
    t = event->time_ns;
  }
  SleepUntilNs(t);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuEventElapsedTime_v2(float* ms, CUevent start, CUevent end) {
  if (ms == nullptr) return CUDA_ERROR_INVALID_VALUE;
  EMU_LOCKED(e);
  if (!e.events.contains(start) || !e.events.contains(end)) return CUDA_ERROR_INVALID_HANDLE;
  if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (start->time_ns < 0 || end->time_ns < 0) return CUDA_ERROR_INVALID_HANDLE;
  if (MonoNowNs() < std::max(start->time_ns, end->time_ns)) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(static_cast<double>(end->time_ns - start->time_ns) / 1e6);
  return CUDA_SUCCESS;
}

SLUICE_EMU_API CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  return cuEventElapsedTime_v2(ms, start, end);
}
