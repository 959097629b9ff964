package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/gbresearch/gb/jobs/llm"
)

// This file keeps what a provider showed of a model's limits where every
// worker reads them: the context window a context_length_exceeded answer
// named (gb_model_windows), and the tokens per minute in force
// (gb_rate_limits). A step reads both with its model's profile; a smaller
// learned window wins over the profile's, and a request is compacted to
// the smaller of the window and the TPM.

// providerLimits is what the provider showed of a model's limits.
type providerLimits struct {
	// window is the context window learned from the provider's refusals;
	// 0 when it refused none.
	window int
	// tpm is the tokens per minute in force for the model's key; 0: none.
	tpm int
}

// windowShrink is how much a refusal that names no window shrinks the
// window in force.
const windowShrink = 0.75

// windowFloor is the smallest window a refusal that names none may teach:
// below it, the refusal more likely says gb's estimate fell short, which
// compacting harder answers.
const windowFloor = 8192

// providerLimitsSQL reads a model's learned window and its key's TPM.
const providerLimitsSQL = `SELECT coalesce((SELECT window_tokens FROM gb_model_windows WHERE model = $1), 0),
	coalesce((SELECT tpm FROM gb_rate_limits WHERE key = $1), 0)`

// learnWindowSQL keeps a window smaller than the one known ($1 model, $2
// window, $3 the size of the request refused); it returns no row when a
// smaller one is known already.
const learnWindowSQL = `INSERT INTO gb_model_windows AS w (model, window_tokens, refused) VALUES ($1, $2, $3)
	ON CONFLICT (model) DO UPDATE SET window_tokens = excluded.window_tokens, refused = excluded.refused, updated_at = now()
	WHERE excluded.window_tokens < w.window_tokens
	RETURNING window_tokens`

// providerLimits reads what the provider showed of a model's limits.
func (a *Service) providerLimits(ctx context.Context, model string) (providerLimits, error) {
	var l providerLimits
	if err := a.pool.QueryRow(ctx, providerLimitsSQL, model).Scan(&l.window, &l.tpm); err != nil {
		return l, fmt.Errorf("error reading the provider's limits of %s: %w", model, err)
	}
	return l, nil
}

// effectiveWindow is the window a request must fit: the profile's, or the
// learned one when it is smaller (0: none known).
func (l providerLimits) effectiveWindow(profile int) int {
	switch {
	case l.window <= 0:
		return profile
	case profile <= 0:
		return l.window
	}
	return min(profile, l.window)
}

// windowNumbers find the window in a provider's context_length_exceeded
// message: OpenAI's "maximum context length is 16384 tokens", Anthropic's
// "prompt is too long: 210000 tokens > 200000 maximum", and the wordings
// of other OpenAI-compatible servers ("context window of 8192 tokens",
// "context length of 4096").
var windowNumbers = []*regexp.Regexp{
	regexp.MustCompile(`(?i)maximum context length is (\d[\d,]*)`),
	regexp.MustCompile(`(?i)> *(\d[\d,]*) *(?:tokens? )?maximum`),
	regexp.MustCompile(`(?i)context (?:window|length|limit|size) (?:is |of )?(\d[\d,]*)`),
	regexp.MustCompile(`(?i)maximum (?:of )?(\d[\d,]*) tokens`),
}

// windowNamed is the window a refusal's message names, or 0.
func windowNamed(msg string) int {
	for _, re := range windowNumbers {
		if m := re.FindStringSubmatch(msg); m != nil {
			if n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", "")); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// nextWindow is the window a context_length_exceeded refusal teaches,
// given the window in force (0: none known) and the size of the refused
// request (prompt and completion cap, as gb counted it): the number the
// refusal names, or else the window in force shrunk by windowShrink, or
// the refused request when that is smaller (the window is under it), never
// below windowFloor. It returns 0 when the refusal teaches nothing
// smaller, and whether the provider named the number.
func nextWindow(msg string, inForce, refused int) (int, bool) {
	if n := windowNamed(msg); n > 0 {
		if inForce > 0 && n >= inForce {
			return 0, true
		}
		return n, true
	}
	n := 0
	if inForce > 0 {
		n = int(float64(inForce) * windowShrink)
	}
	if refused >= windowFloor && (n == 0 || refused < n) {
		n = refused
	}
	if n < windowFloor {
		return 0, false
	}
	return n, false
}

// learnWindow keeps the window a context_length_exceeded refusal teaches
// for model, for every worker, and returns it (0: it taught nothing
// smaller than what is known) and whether the provider named it.
func (a *Service) learnWindow(ctx context.Context, model string, callErr error, inForce, refused int) (int, bool, error) {
	n, named := nextWindow(callErr.Error(), inForce, refused)
	if n == 0 {
		return 0, named, nil
	}
	var kept int
	err := a.pool.QueryRow(context.WithoutCancel(ctx), learnWindowSQL, model, n, refused).Scan(&kept)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, named, nil // another worker learned a smaller one meanwhile
	}
	if err != nil {
		return 0, named, fmt.Errorf("error keeping the window of %s: %w", model, err)
	}
	a.logger.WarnContext(ctx, "the provider's context window is smaller than the model's profile says; using it",
		slog.String("model", model), slog.Int("window", kept), slog.Int("was", inForce), slog.Int("refused_request", refused))
	return kept, named, nil
}

// refused handles a call the provider refused for its size: a
// context_length_exceeded refusal teaches a smaller window, and the limits
// are read again (the refusal's headers may have named a smaller TPM). It
// reports whether the provider named the window it was given, so that the
// request is rebuilt for it rather than also compacted harder (a window
// only guessed at by a shrink may still be too large).
func (a *Service) refused(ctx context.Context, t *turn, callErr error, lim *providerLimits, est llm.Usage) (bool, error) {
	m := a.modelFor(t.run)
	learned, named := 0, false
	if errors.Is(callErr, llm.ErrContextLength) {
		inForce := lim.effectiveWindow(profileOf(m).ContextWindow)
		var err error
		learned, named, err = a.learnWindow(ctx, m.Name(), callErr, inForce, est.PromptTokens+est.CompletionTokens)
		if err != nil {
			return false, err
		}
	}
	fresh, err := a.providerLimits(context.WithoutCancel(ctx), m.Name())
	if err != nil {
		return false, err
	}
	*lim = fresh
	return learned > 0 && named, nil
}
