// PickParking: the rule's cases one by one, then properties over seeded random candidate sets
// (never parks a busy instance, the active count after the decision, longest idle parked first,
// most recently idle un-parked first, deterministic whatever the candidates' order).
#include "core/longtail/pick_parking.h"

#include <algorithm>
#include <random>
#include <set>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

absl::Time At(int s) {
  return absl::UnixEpoch() + absl::Seconds(s);
}

ParkingCandidate C(int64_t id, bool parked, int in_flight, int idle_s) {
  return {id, parked, in_flight, At(idle_s)};
}

TEST(PickParkingTest, ParksTheLongestIdleFirstAndNeverABusyOne) {
  const std::vector<ParkingCandidate> c = {C(1, false, 2, 0), C(2, false, 0, 30),
                                           C(3, false, 0, 10), C(4, false, 0, 20)};
  const ParkingDecision d = PickParking(c, 0);
  EXPECT_EQ(d.park, (std::vector<int64_t>{3, 4, 2}));  // 1 is busy: it keeps its share
  EXPECT_TRUE(d.unpark.empty());
  EXPECT_EQ(PickParking(c, 3).park, (std::vector<int64_t>{3}));
  EXPECT_TRUE(PickParking(c, 4).park.empty());
}

TEST(PickParkingTest, UnparksTheMostRecentlyIdleFirst) {
  const std::vector<ParkingCandidate> c = {C(1, true, 0, 5), C(2, true, 0, 30), C(3, false, 0, 10),
                                           C(4, true, 0, 20)};
  EXPECT_EQ(PickParking(c, 3).unpark, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(PickParking(c, 9).unpark, (std::vector<int64_t>{2, 4, 1}));
  EXPECT_TRUE(PickParking(c, 1).unpark.empty());
  EXPECT_TRUE(PickParking(c, 1).park.empty());
}

TEST(PickParkingTest, TiesGoByIdParkSmallestUnparkLargest) {
  const std::vector<ParkingCandidate> active = {C(7, false, 0, 1), C(3, false, 0, 1),
                                                C(5, false, 0, 1)};
  EXPECT_EQ(PickParking(active, 1).park, (std::vector<int64_t>{3, 5}));
  const std::vector<ParkingCandidate> parked = {C(7, true, 0, 1), C(3, true, 0, 1),
                                                C(5, true, 0, 1)};
  EXPECT_EQ(PickParking(parked, 2).unpark, (std::vector<int64_t>{7, 5}));
}

TEST(PickParkingTest, AParkedInstanceWithWorkInFlightIsUnparkedWhateverIsWanted) {
  const std::vector<ParkingCandidate> c = {C(1, true, 1, 0), C(2, false, 0, 9)};
  const ParkingDecision d = PickParking(c, 0);
  EXPECT_EQ(d.unpark, (std::vector<int64_t>{1}));
  EXPECT_EQ(d.park, (std::vector<int64_t>{2}));
}

TEST(PickParkingTest, NegativeWantedMeansZeroAndNoCandidatesNoDecision) {
  const std::vector<ParkingCandidate> c = {C(1, false, 0, 0)};
  EXPECT_EQ(PickParking(c, -3).park, (std::vector<int64_t>{1}));
  const ParkingDecision d = PickParking({}, 2);
  EXPECT_TRUE(d.park.empty() && d.unpark.empty());
}

std::vector<ParkingCandidate> Random(std::mt19937_64& rng) {
  std::vector<ParkingCandidate> c(std::uniform_int_distribution<int>(0, 12)(rng));
  for (size_t k = 0; k < c.size(); ++k) {
    c[k].id = static_cast<int64_t>(k * 3 + 1);
    c[k].parked = rng() % 2 == 0;
    c[k].in_flight = rng() % 3 == 0 ? static_cast<int>(rng() % 4) : 0;
    c[k].idle_since = At(static_cast<int>(rng() % 6));  // few values: many ties
  }
  return c;
}

TEST(PickParkingPropertyTest, RuleHoldsOnRandomCandidates) {
  std::mt19937_64 rng(13);
  for (int round = 0; round < 2000; ++round) {
    std::vector<ParkingCandidate> c = Random(rng);
    const int wanted = std::uniform_int_distribution<int>(-1, 14)(rng);
    const ParkingDecision d = PickParking(c, wanted);
    const std::set<int64_t> park(d.park.begin(), d.park.end());
    const std::set<int64_t> unpark(d.unpark.begin(), d.unpark.end());
    ASSERT_EQ(park.size(), d.park.size());
    ASSERT_EQ(unpark.size(), d.unpark.size());
    int busy = 0, after = 0;
    for (const ParkingCandidate& x : c) {
      busy += x.in_flight > 0 ? 1 : 0;
      ASSERT_FALSE(park.contains(x.id) && (x.in_flight > 0 || x.parked)) << "round " << round;
      ASSERT_FALSE(unpark.contains(x.id) && !x.parked) << "round " << round;
      after += (x.parked ? unpark.contains(x.id) : !park.contains(x.id)) ? 1 : 0;
    }
    const int n = static_cast<int>(c.size());
    ASSERT_EQ(after, std::max(std::min(std::max(wanted, 0), n), busy)) << "round " << round;
    // Longest idle parked first: no idle active instance kept is idle longer than one parked.
    for (const ParkingCandidate& kept : c) {
      if (kept.parked || kept.in_flight > 0 || park.contains(kept.id))
        continue;
      for (const ParkingCandidate& p : c) {
        if (!park.contains(p.id))
          continue;
        ASSERT_TRUE(p.idle_since < kept.idle_since ||
                    (p.idle_since == kept.idle_since && p.id < kept.id));
      }
    }
    // Most recently idle un-parked first, among the idle parked ones.
    for (const ParkingCandidate& left : c) {
      if (!left.parked || unpark.contains(left.id))
        continue;
      for (const ParkingCandidate& u : c) {
        if (!unpark.contains(u.id) || u.in_flight > 0)
          continue;
        ASSERT_TRUE(u.idle_since > left.idle_since ||
                    (u.idle_since == left.idle_since && u.id > left.id));
      }
    }
    // The candidates' order does not matter.
    std::shuffle(c.begin(), c.end(), rng);
    const ParkingDecision again = PickParking(c, wanted);
    ASSERT_EQ(std::set<int64_t>(again.park.begin(), again.park.end()), park);
    ASSERT_EQ(std::set<int64_t>(again.unpark.begin(), again.unpark.end()), unpark);
  }
}

}  // namespace
}  // namespace sluice::core
