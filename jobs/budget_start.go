package jobs

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gbresearch/gb/jobs/llm"
)

// costPrecision is the smallest dollar figure a budget column holds: a
// budget below it would be stored as 0, which means no budget at all.
const costPrecision = 1e-6

// checkBudget refuses a budget that could never produce a report: one that
// rounds to nothing, or that is smaller than the root's first call (which
// must fit in the budget less the report's share) and its closing call
// (the report) together. The error gives the smallest workable figure.
func (a *Service) checkBudget(p StartParams) error {
	if p.MaxCostUSD > 0 && p.MaxCostUSD < costPrecision {
		return &FieldError{"max_cost_usd", fmt.Sprintf("is %g, which rounds to $0 at the ledger's precision of $%g: "+
			"give at least %g, or 0 for no budget", p.MaxCostUSD, costPrecision, costPrecision)}
	}
	if p.MaxCostUSD == 0 && p.MaxTokens == 0 {
		return nil
	}
	if p.MaxCostUSD > 0 {
		if err := a.checkPriced(p.MaxCostUSD); err != nil {
			return err
		}
	}
	tokens, cost, err := a.minimumBudget(p)
	if err != nil {
		return err
	}
	if p.MaxTokens > 0 && p.MaxTokens < tokens {
		return &FieldError{"max_tokens", fmt.Sprintf("is %d, too small for the research to write a report: its first "+
			"call and its report need at least %d tokens with this topic and model", p.MaxTokens, tokens)}
	}
	if p.MaxCostUSD > 0 && p.MaxCostUSD < cost {
		return &FieldError{"max_cost_usd", fmt.Sprintf("is %g, too small for the research to write a report: its first "+
			"call and its report cost at least $%.6f with this topic and model", p.MaxCostUSD, cost)}
	}
	return nil
}

// checkPriced refuses a dollar budget when a model the research may call
// (the default, or one a sub-agent may be given) has a profile but no
// price: its calls would be counted at $0 and the budget would hold
// nothing while the provider bills.
func (a *Service) checkPriced(maxCost float64) error {
	var unpriced []string
	for _, m := range append([]llm.Model{a.model}, a.models...) {
		if _, ok := m.(llm.Profiler); ok && !profileOf(m).Priced && !slices.Contains(unpriced, m.Name()) {
			unpriced = append(unpriced, m.Name())
		}
	}
	if len(unpriced) == 0 {
		return nil
	}
	return &FieldError{"max_cost_usd", fmt.Sprintf("is $%g, but model %s has no price, so gb cannot count what the "+
		"research costs and the budget would hold nothing: give its price in GB_MODEL_PROFILES, e.g. "+
		"{%q:{\"input\":0.5,\"output\":1.5}} (US dollars per million tokens), or budget in tokens with max_tokens",
		maxCost, strings.Join(unpriced, ", "), unpriced[0])}
}

// minimumBudget is the smallest budget with which a new research can make
// its first call and its report: the first call's prompt and the smallest
// completion worth a call must fit in the budget less the report's share,
// and the report, with the same smallest completion, in what is left.
func (a *Service) minimumBudget(p StartParams) (int64, float64, error) {
	root := &Run{Topic: p.Topic, Model: a.model.Name(), MaxSubagents: a.subagentLimit(nil), MaxSteps: p.MaxSteps}
	conv := []llm.Message{{Role: llm.RoleUser, Content: p.Topic}}
	first, err := a.request(root, conv, false, false)
	if err != nil {
		return 0, 0, err
	}
	closing, err := a.request(root, conv, true, true)
	if err != nil {
		return 0, 0, err
	}
	least := min(minCompletionTokens, a.config.MaxCompletionTokens)
	first.MaxCompletionTokens, closing.MaxCompletionTokens = least, least
	f, c := a.estimateUsage(root, first), a.estimateUsage(root, closing)
	ft, ct := float64(f.PromptTokens+f.CompletionTokens), float64(c.PromptTokens+c.CompletionTokens)
	tokens := math.Ceil(max(ft/(1-reportShare), ft+ct))
	cost := max(f.CostUSD/(1-reportShare), f.CostUSD+c.CostUSD)
	return int64(tokens), math.Ceil(cost/costPrecision) * costPrecision, nil
}
