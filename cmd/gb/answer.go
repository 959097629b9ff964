package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gbresearch/gb/jobs"
)

// researchAnswerCmd is gb research answer ID TEXT: the owner's answer to
// the question an interactive research waits on.
func researchAnswerCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "answer ID TEXT",
		Short: "Answer the question an interactive research asked you; it goes on at once",
		Long: `Answers the question a research started with --interactive waits on (gb research
get ID shows it). The research goes on with the answer at once. A question is
answered once: an answer to a research that waits for none (answered already,
past its deadline, ended) is an error that says why.`,
		Example: `  gb research answer 7 "Go 1.22 and later only"`,
		Args:    args(2, 2, "a run ID and the TEXT of the answer (quote it)"),
		RunE: withClient(func(ctx context.Context, c *apiClient, cmd *cobra.Command, a []string) error {
			id, err := runID(a[0])
			if err != nil {
				return err
			}
			run, err := answerRun(ctx, c, id, a[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "answered run %d: it goes on (%s)\n", run.ID, run.Status)
			return nil
		}),
	}
}

// answerRun posts the owner's answer to run id and returns the run resumed.
func answerRun(ctx context.Context, c *apiClient, id int64, text string) (*jobs.Run, error) {
	var run jobs.Run
	if err := c.do(ctx, "POST", fmt.Sprintf("/v1/gb/research/%d/answer", id), map[string]string{"text": text}, &run); err != nil {
		return nil, err
	}
	return &run, nil
}

// answerTimeoutFlag converts --answer-timeout to answer_timeout_seconds:
// a duration of whole seconds.
func answerTimeoutFlag(d time.Duration) (int, error) {
	if d <= 0 || d%time.Second != 0 {
		return 0, usageErrorf("--answer-timeout %s must be a positive whole number of seconds, like 30m or 24h", d)
	}
	return int(d / time.Second), nil
}

// printQuestion prints the question run id waits on and how to answer it.
func printQuestion(w io.Writer, id int64, question string, deadline *time.Time) {
	fmt.Fprintf(w, "\n[run %d asks] %s\n", id, printable(question))
	by := ""
	if deadline != nil {
		by = " before " + deadline.Local().Format("2006-01-02 15:04:05")
	}
	fmt.Fprintf(w, "answer it%s: gb research answer %d \"…\"\n", by, id)
}

// printQuestions prints, for each input_required event among evs, the
// question in full and how to answer it (a follow's table cuts it).
func printQuestions(w io.Writer, evs []jobs.Event) {
	for _, e := range evs {
		if e.Kind != jobs.EventInputRequired {
			continue
		}
		var d struct {
			Question string     `json:"question"`
			Deadline *time.Time `json:"deadline"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.Question != "" {
			printQuestion(w, e.RunID, d.Question, d.Deadline)
		}
	}
}
