// CV propagation through a pipeline (QUART §5.2, the predictor of Eq. 4-6): the coefficient of
// variation of inter-arrival times at each stage predicted from the entry CV and each upstream
// stage's utilisation and service CV, by the queueing-network departure formula instead of the
// paper's learned attention model (docs/quart.md says why and how to compare the two).
// Used by QuartScaler's smoothing. Pure functions; thread-safe.
#ifndef SLUICE_CORE_QUART_CV_PROPAGATION_H_
#define SLUICE_CORE_QUART_CV_PROPAGATION_H_

#include <vector>

namespace sluice::core {

// CV of the departures of a G/G/c stage (Whitt's QNA linking equation):
//   cd^2 = 1 + (1 - rho^2)(ca^2 - 1) + rho^2 (cs^2 - 1) / sqrt(c),
// which for c = 1 is the brief's cd^2 = rho^2 cs^2 + (1 - rho^2) ca^2. rho is clamped to
// [0, 1] (an overloaded stage emits at its service pace, cd = cs-like); negative or non-finite
// inputs count as 0 and replicas < 1 as 1. Returns cd >= 0.
double DepartureCv(double arrival_cv, double service_cv, double utilisation, int replicas);

// One stage as the propagation sees it.
struct StageCvInput {
  double utilisation = 0;  // rho_i = lambda_i / (r_i mu_i)
  double service_cv = 0;   // CV of the stage's service time (GPU inference: ~0.05-0.3)
  int replicas = 1;
};

// The arrival CV at every stage of a chain: out[0] = entry_cv, out[i + 1] = DepartureCv of
// stage i fed with out[i]. Stage-to-stage activation transfers are taken not to change the CV
// (they are a near-constant delay). Returns one value per stage.
std::vector<double> PredictStageCvs(double entry_cv, const std::vector<StageCvInput>& stages);

}  // namespace sluice::core

#endif  // SLUICE_CORE_QUART_CV_PROPAGATION_H_
