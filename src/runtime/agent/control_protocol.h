/* Agent control messages on the token-server socket: live updates of an instance's <request,
 * limit>, time quota (1.2), priority and memory limit. Same framing as protocol.h (SluiceMsgHeader, fixed-size,
 * little-endian, `bytes` for forward compatibility); sent by the node agent, never by
 * libsluice_cuda.so. Only peers whose SO_PEERCRED uid is the server's own or root may send them.
 * Message types start at 16 so they never collide with protocol.h's. Plain C layout. */
#ifndef SLUICE_RUNTIME_AGENT_CONTROL_PROTOCOL_H_
#define SLUICE_RUNTIME_AGENT_CONTROL_PROTOCOL_H_

#include <stdint.h>

#include "intercept/protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

enum SluiceControlMsgType { SLUICE_MSG_UPDATE = 16, SLUICE_MSG_ACK = 17 };

/* client -> server: set the spec of `instance_id` on GPU `gpu_uuid` (future hellos and live
 * slots). The server answers with an ack and closes the connection. */
typedef struct SluiceUpdate {
  SluiceMsgHeader hdr;
  uint16_t version_major; /* SLUICE_PROTO_MAJOR */
  uint16_t version_minor;
  uint32_t priority;      /* enum SluicePriority */
  int64_t instance_id;
  uint32_t request_ppm;   /* 0 < request <= limit <= 1e6 */
  uint32_t limit_ppm;
  uint32_t flags;         /* SLUICE_SLOT_FLAG_* */
  /* 1.2 (was reserved): time quota q in ppm, (0, 1e6]; 0 (a 1.0/1.1 sender) means 1e6. */
  uint32_t time_quota_ppm;
  int64_t mem_limit_bytes; /* 0 = none */
  char gpu_uuid[SLUICE_UUID_BYTES];
} SluiceUpdate;

enum SluiceAckStatus {
  SLUICE_ACK_OK = 0,
  SLUICE_ACK_INVALID = 1,     /* bad quota or fields */
  SLUICE_ACK_DENIED = 2,      /* peer uid not privileged */
  SLUICE_ACK_UNKNOWN_GPU = 3,
  SLUICE_ACK_VERSION = 4
};

typedef struct SluiceAck {
  SluiceMsgHeader hdr;
  uint32_t status;        /* enum SluiceAckStatus */
  uint32_t reserved;
  char detail[120];
} SluiceAck;

#ifdef __cplusplus
static_assert(sizeof(SluiceUpdate) == 112, "update layout");
static_assert(sizeof(SluiceAck) == 136, "ack layout");
} /* extern "C" */
#endif

#endif /* SLUICE_RUNTIME_AGENT_CONTROL_PROTOCOL_H_ */
