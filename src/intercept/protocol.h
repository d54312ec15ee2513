/* Shared-memory and socket protocol between libsluice_cuda.so (client), the per-GPU token server
 * (src/runtime/agent) and the emulated device (src/intercept/emulated). Plain C, no STL; the
 * layout is the contract. Fields marked [atomic] are touched only with __atomic builtins (C) or
 * std::atomic_ref (C++); all other fields are written before publication and then read-only.
 * Full description, with the memory-ordering rules: docs/intercept-protocol.md. */
#ifndef SLUICE_INTERCEPT_PROTOCOL_H_
#define SLUICE_INTERCEPT_PROTOCOL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define SLUICE_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define SLUICE_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* Version handshake: a client and a server talk if their majors are equal; they then use
 * min(minor). A minor bump only appends fields into reserved space or adds message types. */
#define SLUICE_PROTO_MAJOR 1
#define SLUICE_PROTO_MINOR 2
/* Minor history: 1.1 added SluiceSlot.sync_points (a 1.0 peer neither writes nor reads it).
 * 1.2 added the time quota (HAS-GPU's q): SluiceSlot.time_quota_ppm (was reserved1),
 * SluiceSlot.share_tokens (line 3, was padding) and SluiceShmHeader.time_window_ns (was
 * reserved). All three are server-written; the server enforces q through the budgets it
 * issues, so a 1.0/1.1 client is time-sliced too and only its fail-open metering ignores q. */
#define SLUICE_PROTO_MINOR_SYNC_POINTS 1
#define SLUICE_PROTO_MINOR_TIME_QUOTA 2

/* ---- Shared-memory segment: one per GPU, in /dev/shm ----
 * Name: SLUICE_SHM_PREFIX + GPU UUID as printed by nvidia-smi, e.g. "/sluice-gpu-GPU-8a5c...".
 * Created, sized and initialised by the token server (mode 0600 or a group the instances share);
 * clients map it read-write after a welcome. Size = header_bytes + slot_count * slot_bytes. */
#define SLUICE_SHM_PREFIX "/sluice-gpu-"
#define SLUICE_SHM_MAGIC 0x31454349554c53ULL /* "SLUICE1" little-endian */
#define SLUICE_MAX_SLOTS 32
#define SLUICE_UUID_BYTES 64     /* NUL-terminated text */
#define SLUICE_SHM_NAME_BYTES 96 /* NUL-terminated text */
#define SLUICE_CACHE_LINE 64

/* What a client does when the server's heartbeat is older than the fail timeout. */
enum SluiceFailPolicy {
  /* Keep running at the instance's limit, metered locally from elapsed time. */
  SLUICE_FAIL_OPEN = 0,
  /* Refuse gated launches with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES until the server is back. */
  SLUICE_FAIL_CLOSED = 1
};

/* Instance slot lifecycle (written by the server only):
 *   FREE -> ACTIVE      server claimed it for a hello, before sending welcome (generation++)
 *   ACTIVE -> RETIRING  the client's socket reached EOF or its pid is gone; server reclaims
 *   RETIRING -> FREE    server zeroed counters and released the instance's memory charge
 * A client that sees anything but ACTIVE with its own generation stops using the slot. */
enum SluiceSlotState { SLUICE_SLOT_FREE = 0, SLUICE_SLOT_ACTIVE = 1, SLUICE_SLOT_RETIRING = 2 };

/* Priority classes, as the vertical controller sees them. */
enum SluicePriority { SLUICE_PRIO_BEST_EFFORT = 0, SLUICE_PRIO_SLO = 1 };
#define SLUICE_SLOT_FLAG_LLM 0x1u /* LLM instance: tighter kernel-launch-cycle threshold */

/* Segment header. Written by the server; clients only read it. */
typedef struct SluiceShmHeader {
  uint64_t magic;         /* [atomic] SLUICE_SHM_MAGIC, stored last (release) after init */
  uint16_t version_major; /* SLUICE_PROTO_MAJOR of the server that created the segment */
  uint16_t version_minor;
  uint32_t header_bytes; /* sizeof(SluiceShmHeader) */
  uint32_t slot_bytes;   /* sizeof(SluiceSlot) */
  uint32_t slot_count;   /* <= SLUICE_MAX_SLOTS */
  uint32_t server_pid;
  uint32_t fail_policy;    /* enum SluiceFailPolicy: default; env SLUICE_FAIL_POLICY overrides */
  int64_t period_ns;       /* [atomic] token period, >= 1 ms, default 5 ms */
  int64_t max_tokens;      /* [atomic] blocks the whole GPU runs per period (fail-open metering) */
  int64_t fail_timeout_ns; /* heartbeat age after which clients apply fail_policy */
  uint64_t period_seq;     /* [atomic] +1 at every refill, stored (release) after all budgets */
  int64_t heartbeat_ns;    /* [atomic] CLOCK_MONOTONIC ns of the latest refill (release) */
  char gpu_uuid[SLUICE_UUID_BYTES];
  /* 1.2: the time-quota scheduling window (a whole number of periods, >= period_ns). A slot's
   * time_quota_ppm is the share of each window it may run kernels for. 0 in a 1.0/1.1 segment. */
  int64_t time_window_ns; /* [atomic] */
  uint8_t reserved[256 - 144];
} SluiceShmHeader;

/* One instance slot: four cache lines. Line 0 is the launch fast path (client RMWs every launch,
 * server once per period); the others change rarely. */
typedef struct SluiceSlot {
  /* -- line 0: hot -- */
  int64_t budget;         /* [atomic] tokens (blocks) left in this period; clients fetch_sub the
                             launch cost (relaxed); the server refills once per period (CAS) */
  uint64_t budget_period; /* [atomic] period_seq the current budget was issued for (release) */
  int64_t blocks_total;   /* [atomic] client: blocks launched since registration (relaxed add) */
  int64_t kernels_total;  /* [atomic] client: kernels launched since registration (relaxed add) */
  uint32_t futex_word;    /* [atomic] server: +1 after each refill, then FUTEX_WAKE if waiters */
  uint32_t waiters;       /* [atomic] client: threads sleeping on futex_word (+1 before wait) */
  uint8_t pad0[SLUICE_CACHE_LINE - 40];
  /* -- line 1: identity and quota (server writes; clients read) -- */
  uint32_t state;       /* [atomic] enum SluiceSlotState */
  uint32_t generation;  /* [atomic] +1 each time the slot is claimed; echoed in welcome */
  uint32_t pid;         /* SO_PEERCRED pid of the client, in the server's pid namespace */
  uint32_t priority;    /* [atomic] enum SluicePriority */
  int64_t instance_id;  /* sluice InstanceId from hello */
  uint32_t request_ppm; /* [atomic] guaranteed share of the GPU, parts per million */
  uint32_t limit_ppm;   /* [atomic] maximum share of the GPU, parts per million */
  uint32_t flags;       /* [atomic] SLUICE_SLOT_FLAG_* */
  /* [atomic] 1.2: time quota q, parts per million of each scheduling window the instance may
   * run kernels for (at its limit share within that time). 0 (a 1.0/1.1 server) means 1e6. */
  uint32_t time_quota_ppm;
  int64_t registered_ns; /* CLOCK_MONOTONIC ns of the welcome */
  uint8_t pad1[SLUICE_CACHE_LINE - 48];
  /* -- line 2: memory -- */
  int64_t mem_limit_bytes; /* [atomic] server: device-memory limit; 0 = unlimited */
  int64_t mem_used_bytes;  /* [atomic] client: bytes currently allocated (relaxed add/sub) */
  int64_t mem_peak_bytes;  /* [atomic] client: high-water mark (relaxed CAS max) */
  /* [atomic] 1.1 client: host synchronisation points (cuStreamSynchronize, cuCtxSynchronize,
   * cuEventSynchronize, synchronous cuMemcpyDtoH) since registration, relaxed add; the server
   * counts one iteration boundary per point. Off line 0 so the launch path never shares it.
   * Zero and unused when the negotiated minor is 0. */
  int64_t sync_points;
  uint8_t pad2[SLUICE_CACHE_LINE - 32];
  /* -- line 3: server-published per-period statistics (observability, tests) -- */
  int64_t blocks_last_period;  /* [atomic] blocks_total delta over the last full period */
  int64_t kernels_last_period; /* [atomic] kernels_total delta over the last full period */
  int64_t tokens_issued;       /* [atomic] tokens granted for the current period */
  int64_t klc_ns;              /* [atomic] latest kernel-launch cycle measured by the server */
  /* [atomic] 1.2: tokens the vertical controller granted for the current period from the SM
   * share alone, before the time quota; tokens_issued <= share_tokens. */
  int64_t share_tokens;
  uint8_t pad3[SLUICE_CACHE_LINE - 40];
} SluiceSlot;

SLUICE_STATIC_ASSERT(sizeof(SluiceShmHeader) == 256, "header layout");
SLUICE_STATIC_ASSERT(sizeof(SluiceSlot) == 4 * SLUICE_CACHE_LINE, "slot layout");
SLUICE_STATIC_ASSERT(offsetof(SluiceSlot, state) == SLUICE_CACHE_LINE, "slot line 1");
SLUICE_STATIC_ASSERT(offsetof(SluiceSlot, mem_limit_bytes) == 2 * SLUICE_CACHE_LINE, "line 2");
SLUICE_STATIC_ASSERT(offsetof(SluiceSlot, sync_points) == 2 * SLUICE_CACHE_LINE + 24, "line 2");
SLUICE_STATIC_ASSERT(offsetof(SluiceSlot, blocks_last_period) == 3 * SLUICE_CACHE_LINE, "line 3");
SLUICE_STATIC_ASSERT(offsetof(SluiceSlot, time_quota_ppm) == SLUICE_CACHE_LINE + 36, "line 1");
SLUICE_STATIC_ASSERT(offsetof(SluiceSlot, share_tokens) == 3 * SLUICE_CACHE_LINE + 32, "line 3");
SLUICE_STATIC_ASSERT(offsetof(SluiceShmHeader, time_window_ns) == 136, "header 1.2");

/* The slots follow the header; the segment is mapped page-aligned so slots are line-aligned. */
static inline SluiceSlot* SluiceShmSlots(SluiceShmHeader* h) {
  return (SluiceSlot*)((char*)h + h->header_bytes);
}
static inline size_t SluiceShmBytes(uint32_t slot_count) {
  return sizeof(SluiceShmHeader) + (size_t)slot_count * sizeof(SluiceSlot);
}

/* ---- Registration socket (SOCK_SEQPACKET or SOCK_STREAM, AF_UNIX) ----
 * Path: env SLUICE_TOKEN_SOCKET. One socket may serve every GPU of the node (hello names the GPU).
 * client -> hello; server -> welcome | reject. The server authenticates the peer with SO_PEERCRED
 * (uid allowed by its configuration; the credential pid is the one recorded in the slot). The
 * client keeps the connection open for its lifetime: EOF tells the server to retire the slot.
 * Messages are fixed-size, little-endian, sent whole; `bytes` lets newer minors append fields. */
#define SLUICE_MSG_MAGIC 0x534c4d31u /* "1MLS" */
enum SluiceMsgType { SLUICE_MSG_HELLO = 1, SLUICE_MSG_WELCOME = 2, SLUICE_MSG_REJECT = 3 };

typedef struct SluiceMsgHeader {
  uint32_t magic; /* SLUICE_MSG_MAGIC */
  uint16_t type;  /* enum SluiceMsgType */
  uint16_t bytes; /* size of the whole message including this header */
} SluiceMsgHeader;

typedef struct SluiceHello {
  SluiceMsgHeader hdr;
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t pid;           /* getpid() of the client (informational: the server trusts the cred) */
  int64_t instance_id;    /* env SLUICE_INSTANCE_ID; -1 when unknown */
  int32_t requested_slot; /* -1: any free slot; else re-attach to that slot (same pid only) */
  uint32_t reserved;
  char gpu_uuid[SLUICE_UUID_BYTES];
} SluiceHello;

typedef struct SluiceWelcome {
  SluiceMsgHeader hdr;
  uint16_t version_major; /* negotiated: server major, min(minor) */
  uint16_t version_minor;
  uint32_t slot_index;
  uint32_t generation; /* the slot's generation after the claim */
  uint32_t reserved;
  uint64_t shm_bytes; /* SluiceShmBytes(slot_count) */
  char shm_name[SLUICE_SHM_NAME_BYTES];
} SluiceWelcome;

enum SluiceRejectReason {
  SLUICE_REJECT_VERSION = 1,     /* major mismatch */
  SLUICE_REJECT_MALFORMED = 2,   /* bad magic, type or size */
  SLUICE_REJECT_UNKNOWN_GPU = 3, /* no token server for that UUID */
  SLUICE_REJECT_NO_SLOT = 4,     /* all slots in use */
  SLUICE_REJECT_SLOT_BUSY = 5,   /* requested_slot held by another process */
  SLUICE_REJECT_DENIED = 6       /* SO_PEERCRED uid not allowed */
};

typedef struct SluiceReject {
  SluiceMsgHeader hdr;
  uint16_t version_major; /* the server's own version, so the client can report it */
  uint16_t version_minor;
  uint32_t reason;  /* enum SluiceRejectReason */
  char detail[120]; /* NUL-terminated human-readable text */
} SluiceReject;

SLUICE_STATIC_ASSERT(sizeof(SluiceHello) == 96, "hello layout");
SLUICE_STATIC_ASSERT(sizeof(SluiceWelcome) == 128, "welcome layout");
SLUICE_STATIC_ASSERT(sizeof(SluiceReject) == 136, "reject layout");

#ifdef __cplusplus
} /* extern "C" */
#endif
#undef SLUICE_STATIC_ASSERT

#endif /* SLUICE_INTERCEPT_PROTOCOL_H_ */
