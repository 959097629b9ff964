package jobs_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gbresearch/gb/infra/dbtest"
	"github.com/gbresearch/gb/jobs"
	"github.com/gbresearch/gb/jobs/llm"
)

func TestSendInputReachesAWorkingChildAtItsNextStep(t *testing.T) {
	t.Parallel()
	sent := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var kidSaw, refused string
	model := &scriptModel{fn: func(ctx context.Context, req llm.Request) (llm.Message, error) {
		switch topic(req) {
		case "quick":
			return llm.Message{Content: "quick report"}, nil
		case "long":
			if turns(req) == 0 {
				select { // stays in its first step until the input was sent
				case <-sent:
				case <-ctx.Done():
					return llm.Message{}, ctx.Err()
				}
				return llm.Message{ToolCalls: []llm.ToolCall{toolCall("search", `{"query":"context"}`)}}, nil
			}
			mu.Lock()
			for _, m := range req.Messages {
				if m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "Message from your parent") {
					kidSaw += m.Content + "\n"
				}
			}
			mu.Unlock()
			return llm.Message{Content: "long report"}, nil
		}
		switch turns(req) {
		case 0:
			return llm.Message{ToolCalls: []llm.ToolCall{
				toolCall("spawn_subagent", `{"name":"quick","reason":"ends at once","task":"quick"}`),
				toolCall("spawn_subagent", `{"name":"long","reason":"takes a while","task":"long"}`)}}, nil
		case 1:
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{"names":["quick"]}`)}}, nil
		case 2:
			return llm.Message{ToolCalls: []llm.ToolCall{
				toolCall("send_input", `{"name":"quick","text":"too late"}`),
				toolCall("send_input", `{"name":"long","text":"focus on cancellation"}`)}}, nil
		case 3:
			once.Do(func() { close(sent) })
			mu.Lock()
			refused = stepResults(req)
			mu.Unlock()
			return llm.Message{ToolCalls: []llm.ToolCall{toolCall("wait_subagents", `{}`)}}, nil
		}
		return llm.Message{Content: "done"}, nil
	}}
	pool := dbtest.NewPool(t)
	b := setupOn(t, pool, setupOpts{model: model, msgr: withMessenger(t, pool)})
	root, _, err := b.agent.StartResearch(context.Background(), jobs.StartParams{UserID: b.userID, Topic: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if done := waitEnded(t, b.pool, root.ID, 30*time.Second); done.Status != jobs.StatusSucceeded {
		t.Fatalf("%s %q", done.Status, done.Error)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Count(kidSaw, "Message from your parent: focus on cancellation") != 1 {
		t.Errorf("the child saw its parent's input %d times, want once:\n%s", strings.Count(kidSaw, "focus on cancellation"), kidSaw)
	}
	if !strings.Contains(refused, "Error: quick has ended (succeeded): its inbox is gone and the input was not delivered") ||
		!strings.Contains(refused, "sent to long (run") {
		t.Errorf("send_input results:\n%s", refused)
	}
	var read int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM gb_messages WHERE text = 'focus on cancellation' AND read_at IS NOT NULL`).Scan(&read); err != nil || read != 1 {
		t.Errorf("the input is in the transcript, read: %d (%v)", read, err)
	}
}
