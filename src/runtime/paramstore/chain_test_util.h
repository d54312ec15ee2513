// Helpers of the chain tests (chain_test.cc, chain_release_test.cc): agents on localhost, each
// with its own small pre-touched store and receive port, and random models.
#ifndef SLUICE_RUNTIME_PARAMSTORE_CHAIN_TEST_UTIL_H_
#define SLUICE_RUNTIME_PARAMSTORE_CHAIN_TEST_UTIL_H_

#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "runtime/paramstore/chain_receiver.h"
#include "runtime/paramstore/chain_sender.h"

namespace sluice::runtime {

inline constexpr int64_t kMiB = int64_t{1} << 20;

// A store whose arena is touched at start, as an agent's (small: each test makes several).
inline std::unique_ptr<ParamStore> MakeStore() {
  ParamStoreOptions o;
  o.capacity_bytes = 32 * kMiB;
  o.pretouch = Pretouch::kAtStart;
  return std::move(ParamStore::Create(o)).value();
}

inline ChainOptions FastOptions() {
  ChainOptions o;
  o.chunk_bytes = kMiB;
  o.connect_timeout = absl::Seconds(1);
  o.io_timeout = absl::Seconds(2);  // a loaded 2-core box must not look dead
  return o;
}

// One agent: a store and its receive port.
struct Agent {
  std::unique_ptr<ParamStore> store = MakeStore();
  std::unique_ptr<ChainReceiver> receiver;
  explicit Agent(absl::Duration orphan_timeout = absl::Seconds(3), std::string token = "") {
    ChainReceiverOptions o;
    o.chain = FastOptions();
    o.chain.token = std::move(token);
    o.orphan_timeout = orphan_timeout;
    receiver = std::move(ChainReceiver::Start(*store, o)).value();
  }
};

// The origin's store holding `model` of `bytes` random bytes; returns its contents.
inline std::string PutRandom(ParamStore& store, const std::string& model, int64_t bytes, int seed) {
  std::string data(static_cast<size_t>(bytes), '\0');
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  for (size_t i = 0; i + 8 <= data.size(); i += 8) {
    const uint64_t v = rng();
    std::memcpy(&data[i], &v, 8);
  }
  auto w = store.BeginPut(model, bytes);
  EXPECT_TRUE(w.ok());
  std::memcpy((*w)->data(), data.data(), data.size());
  EXPECT_TRUE((*w)->Commit().ok());
  return data;
}

inline std::string Contents(ParamStore& store, const std::string& model) {
  auto l = store.Acquire(model);
  if (!l.ok()) return "<" + std::string(l.status().message()) + ">";
  return std::string((*l)->data(), static_cast<size_t>((*l)->size()));
}

inline ChainHello HelloFor(const ParamLease& l, uint64_t id) {
  ChainHello h;
  h.transfer_id = id;
  h.model = l.model();
  h.total_bytes = l.size();
  h.chunk_bytes = kMiB;
  return h;
}

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_PARAMSTORE_CHAIN_TEST_UTIL_H_
