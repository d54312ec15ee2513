// PlanZigzag: the ILP of BlitzScale §5.2 as reconstructed in docs/blitzscale.md, solved with
// GLPK's branch and cut under the input's time limit, a local search from best effort as its
// first incumbent, and best effort as the fallback.
//   z[i][k] in {0,1}  batch i runs layer k on the target: x_i = sum_k z[i][k], z[i][k+1] <= z[i][k]
//   S_i >= 0          batch i's start on the source; F_i = S_i + w_i (L - x_i)
//   y[i][k] in [0,1]  some batch j <= i runs layer k on the target (k > layers_loaded)
//   auxiliary, to keep rows sparse: D[i][k] = sum_{k' >= k} z[i][k'],
//                                   C[i][k] = sum_{j <= i} w_j D[j][k]
//   min sum_i F_i
//   FIFO  S_i >= F_{i-1}
//   C2+C3 S_i >= a_k y[i][k] + sum_{j <= i} w_j sum_{k' >= k} z[j][k']   for every k
// (the target cannot finish batches 1..i before layer k arrives plus the work of theirs that
// needs layer k or later; exact for a target that never blocks, see the doc).
#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "common/status.h"
#include "core/llm/zigzag.h"
#include "core/llm/zigzag_internal.h"

namespace sluice::core::llm {
namespace {

// Column numbering (GLPK columns are 1-based). Blocks: z, S, D, C, y.
class Model {
 public:
  explicit Model(const ZigzagInput& in)
      : in_(in), n_(static_cast<int>(in.weight.size())), cap_(TargetLayerCap(in)),
        first_y_(std::min(in.layers_loaded, cap_) + 1), ny_(cap_ - first_y_ + 1) {
    for (int k : BoundLayersImpl())
      bound_layers_.push_back(k);
    nb_ = static_cast<int>(bound_layers_.size());
  }

  int n() const { return n_; }
  int cap() const { return cap_; }
  int z(int i, int k) const { return 1 + i * cap_ + (k - 1); }
  int s(int i) const { return 1 + n_ * cap_ + i; }
  // D[i][k] = (x_i - k + 1)^+ = sum_{k' >= k} z[i][k'], k in 1..cap.
  int d(int i, int k) const { return 1 + n_ * cap_ + n_ + i * cap_ + (k - 1); }
  // C[i][b] = sum_{j <= i} w_j D[j][bound_layers[b]].
  int c(int i, int b) const { return 1 + 2 * n_ * cap_ + n_ + i * nb_ + b; }
  bool has_y(int k) const { return k >= first_y_; }
  int y(int i, int k) const {
    return 1 + 2 * n_ * cap_ + n_ + n_ * nb_ + i * ny_ + (k - first_y_);
  }
  int cols() const { return 2 * n_ * cap_ + n_ + n_ * nb_ + n_ * ny_; }
  // The layers k whose release-date rows are not dominated: k = 1 and every layer not loaded.
  const std::vector<int>& BoundLayers() const { return bound_layers_; }
  // Column values for assignment `x`, each continuous variable at its least feasible value.
  std::vector<double> Values(const std::vector<int>& x) const;

 private:
  std::vector<int> BoundLayersImpl() const {
    std::vector<int> ks;
    if (!has_y(1))
      ks.push_back(1);
    for (int k = first_y_; k <= cap_; ++k)
      ks.push_back(k);
    return ks;
  }

  const ZigzagInput& in_;
  int n_, cap_, first_y_, ny_, nb_ = 0;
  std::vector<int> bound_layers_;
};

std::vector<double> Model::Values(const std::vector<int>& x) const {
  std::vector<double> v(cols() + 1, 0.0);
  double prev_finish = 0;
  for (int i = 0; i < n_; ++i) {
    for (int k = 1; k <= cap_; ++k) {
      v[z(i, k)] = k <= x[i] ? 1 : 0;
      v[d(i, k)] = std::max(0, x[i] - k + 1);
    }
    double start = prev_finish;
    for (int b = 0; b < nb_; ++b) {
      const int k = bound_layers_[b];
      v[c(i, b)] = (i > 0 ? v[c(i - 1, b)] : 0) + in_.weight[i] * v[d(i, k)];
      double ready = 0;
      if (has_y(k)) {
        v[y(i, k)] = (i > 0 && v[y(i - 1, k)] > 0.5) || k <= x[i] ? 1 : 0;
        ready = LayerReadyTime(in_, k) * v[y(i, k)];
      }
      start = std::max(start, ready + v[c(i, b)]);
    }
    v[s(i)] = start;
    prev_finish = start + in_.weight[i] * (in_.num_layers - x[i]);
  }
  return v;
}

class Rows {
 public:
  void Add(int col, double coef) {
    ia_.push_back(row_);
    ja_.push_back(col);
    ar_.push_back(coef);
  }
  // Starts a row `lo <= sum <= hi` (GLPK bound type `type`).
  void Begin(glp_prob* p, int type, double lo, double hi) {
    row_ = glp_add_rows(p, 1);
    glp_set_row_bnds(p, row_, type, lo, hi);
  }
  void Load(glp_prob* p) {
    glp_load_matrix(p, static_cast<int>(ia_.size()) - 1, ia_.data(), ja_.data(), ar_.data());
  }

 private:
  int row_ = 0;
  std::vector<int> ia_{0}, ja_{0};  // GLPK ignores element 0
  std::vector<double> ar_{0.0};
};

void AddColumns(glp_prob* p, const Model& m, const ZigzagInput& in) {
  glp_add_cols(p, m.cols());
  double constant = 0;
  for (int i = 0; i < m.n(); ++i) {
    const double w = in.weight[i];
    constant += w * in.num_layers;
    for (int k = 1; k <= m.cap(); ++k) {
      glp_set_col_kind(p, m.z(i, k), GLP_BV);
      glp_set_col_bnds(p, m.d(i, k), GLP_DB, 0, m.cap() - k + 1);
      if (m.has_y(k))
        glp_set_col_bnds(p, m.y(i, k), GLP_DB, 0, 1);
    }
    for (size_t b = 0; b < m.BoundLayers().size(); ++b)
      glp_set_col_bnds(p, m.c(i, static_cast<int>(b)), GLP_LO, 0, 0);
    glp_set_obj_coef(p, m.d(i, 1), -w);  // F_i = S_i + w_i (L - x_i), x_i = D[i][1]
    glp_set_col_bnds(p, m.s(i), GLP_LO, 0, 0);
    glp_set_obj_coef(p, m.s(i), 1);
  }
  glp_set_obj_coef(p, 0, constant);
}

// z monotone, the suffix sums D, and FIFO on the source.
void AddAssignmentRows(Rows& r, glp_prob* p, const Model& m, const ZigzagInput& in, int i) {
  for (int k = 1; k <= m.cap(); ++k) {
    if (k < m.cap()) {  // z[i][k+1] <= z[i][k]
      r.Begin(p, GLP_UP, 0, 0);
      r.Add(m.z(i, k + 1), 1);
      r.Add(m.z(i, k), -1);
    }
    r.Begin(p, GLP_FX, 0, 0);  // D[i][k] = z[i][k] + D[i][k+1]
    r.Add(m.d(i, k), 1);
    r.Add(m.z(i, k), -1);
    if (k < m.cap())
      r.Add(m.d(i, k + 1), -1);
  }
  if (i > 0) {  // S_i - S_{i-1} + w_{i-1} x_{i-1} >= w_{i-1} L
    const double w = in.weight[i - 1];
    r.Begin(p, GLP_LO, w * in.num_layers, 0);
    r.Add(m.s(i), 1);
    r.Add(m.s(i - 1), -1);
    r.Add(m.d(i - 1, 1), w);
  }
}

// C2+C3: S_i >= a_k y[i][k] + C[i][k], with C and y accumulated over the batches.
void AddBoundRows(Rows& r, glp_prob* p, const Model& m, const ZigzagInput& in, int i) {
  const std::vector<int>& ks = m.BoundLayers();
  for (int b = 0; b < static_cast<int>(ks.size()); ++b) {
    const int k = ks[b];
    r.Begin(p, GLP_FX, 0, 0);  // C[i][b] = C[i-1][b] + w_i D[i][k]
    r.Add(m.c(i, b), 1);
    if (i > 0)
      r.Add(m.c(i - 1, b), -1);
    r.Add(m.d(i, k), -in.weight[i]);
    r.Begin(p, GLP_LO, 0, 0);
    r.Add(m.s(i), 1);
    r.Add(m.c(i, b), -1);
    if (!m.has_y(k))
      continue;
    r.Add(m.y(i, k), -LayerReadyTime(in, k));
    r.Begin(p, GLP_LO, 0, 0);  // y[i][k] >= z[i][k]
    r.Add(m.y(i, k), 1);
    r.Add(m.z(i, k), -1);
    if (i > 0) {  // y[i][k] >= y[i-1][k]
      r.Begin(p, GLP_LO, 0, 0);
      r.Add(m.y(i, k), 1);
      r.Add(m.y(i - 1, k), -1);
    }
  }
}

void AddRows(glp_prob* p, const Model& m, const ZigzagInput& in) {
  Rows r;
  for (int i = 0; i < m.n(); ++i) {
    AddAssignmentRows(r, p, m, in, i);
    AddBoundRows(r, p, m, in, i);
  }
  r.Load(p);
}

struct Incumbent {
  std::vector<double> values;  // 1-based column values of the heuristic plan
  bool offered = false;
};

void OfferIncumbent(glp_tree* tree, void* info) {
  auto* inc = static_cast<Incumbent*>(info);
  if (glp_ios_reason(tree) != GLP_IHEUR || inc->offered)
    return;
  inc->offered = true;
  (void)glp_ios_heur_sol(tree, inc->values.data());
}

}  // namespace

absl::StatusOr<ZigzagPlan> PlanZigzag(const ZigzagInput& input) {
  SLUICE_RETURN_IF_ERROR(ValidateZigzagInput(input));
  const std::vector<int> best_effort = internal::BestEffortLayers(input);
  ZigzagPlan fallback = internal::Judge(input, best_effort, "best-effort", false);
  const Model m(input);
  if (m.cap() == 0)  // nothing may run on the target: the one plan is all-source
    return internal::Judge(input, best_effort, "ilp", true);

  glp_term_out(GLP_OFF);
  glp_prob* p = glp_create_prob();
  glp_set_obj_dir(p, GLP_MIN);
  AddColumns(p, m, input);
  AddRows(p, m, input);

  glp_smcp lp;
  glp_init_smcp(&lp);
  lp.msg_lev = GLP_MSG_OFF;
  lp.presolve = GLP_ON;  // ~25 % off the root LP, about half of the whole solve
  lp.tm_lim = std::max(1, static_cast<int>(std::lround(input.time_limit_ms)));
  const std::vector<int> heuristic = internal::LocalSearch(input, best_effort);
  Incumbent inc{m.Values(heuristic)};
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.msg_lev = GLP_MSG_OFF;
  parm.tm_lim = std::max(1, static_cast<int>(std::lround(input.time_limit_ms)));
  parm.cb_func = OfferIncumbent;
  parm.cb_info = &inc;
  const bool lp_ok = glp_simplex(p, &lp) == 0 && glp_get_status(p) == GLP_OPT;
  // The root LP bounds the model, and the model bounds SimulateZigzag from below (its rows are
  // valid lower bounds on any schedule), so it bounds the best achievable total finish time.
  const double lower_bound =
      lp_ok ? glp_get_obj_val(p) : -std::numeric_limits<double>::infinity();
  const int rc = lp_ok ? glp_intopt(p, &parm) : -1;
  const int status = lp_ok ? glp_mip_status(p) : GLP_UNDEF;
  std::vector<int> x(m.n(), 0);
  const bool have = (rc == 0 || rc == GLP_ETMLIM) && (status == GLP_OPT || status == GLP_FEAS);
  if (have) {
    for (int i = 0; i < m.n(); ++i) {
      for (int k = 1; k <= m.cap(); ++k)
        x[i] += glp_mip_col_val(p, m.z(i, k)) > 0.5 ? 1 : 0;
    }
  }
  glp_delete_prob(p);
  ZigzagPlan local = internal::Judge(input, heuristic, "local-search", false);
  if (local.mean_latency < fallback.mean_latency - 1e-9)
    fallback = std::move(local);
  const auto gap_of = [&](const ZigzagPlan& plan) {
    const double total = plan.mean_latency * m.n();
    if (!std::isfinite(lower_bound))
      return 1.0;
    return total > 0 ? std::clamp((total - lower_bound) / total, 0.0, 1.0) : 0.0;
  };
  fallback.gap = gap_of(fallback);
  if (!have)
    return fallback;  // no integer solution in time: the better of local search and best effort
  const bool optimal = rc == 0 && status == GLP_OPT;
  ZigzagPlan plan = internal::Judge(input, std::move(x), optimal ? "ilp" : "ilp-timeout", optimal);
  plan.gap = optimal ? 0 : gap_of(plan);
  // The ILP's target model ignores a layer blocking an earlier batch's freshly loaded one; when
  // that makes its plan lose under the real schedule, the better of the heuristic incumbent and
  // best effort is returned instead.
  return plan.mean_latency <= fallback.mean_latency + 1e-9 ? plan : fallback;
}

}  // namespace sluice::core::llm
