package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectMCP connects the SDK's client to newMCPServer over in-memory
// transports; the server calls the API at url with key. progress, when
// set, receives the progress notifications.
func connectMCP(t *testing.T, ctx context.Context, url, key string, progress func(*mcp.ProgressNotificationParams)) *mcp.ClientSession {
	t.Helper()
	server := newMCPServer(&apiClient{base: url, key: key, http: &http.Client{Timeout: clientTimeout}})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	opts := &mcp.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress(req.Params)
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gb-test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestMCPToolsHaveTitlesAndAnnotations checks that every tool the server
// registers, whoever added it, has a title and annotations that say
// whether it only reads, and the hints of the tools whose kind is known.
func TestMCPToolsHaveTitlesAndAnnotations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := connectMCP(t, ctx, "http://127.0.0.1:1", "gb_unused", nil)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
		a := tl.Annotations
		switch {
		case tl.Title == "":
			t.Errorf("tool %s has no title", tl.Name)
		case a == nil:
			t.Errorf("tool %s has no annotations", tl.Name)
		case !a.ReadOnlyHint && a.DestructiveHint == nil:
			t.Errorf("tool %s says neither that it only reads nor whether it destroys", tl.Name)
		case a.ReadOnlyHint && !a.IdempotentHint:
			t.Errorf("tool %s only reads but is not marked idempotent", tl.Name)
		case a.OpenWorldHint == nil || a.DestructiveHint == nil:
			t.Errorf("tool %s leaves openWorldHint or destructiveHint unset", tl.Name)
		}
	}
	for _, name := range []string{"get_research", "list_research", "get_tree", "get_events", "get_messages", "get_sources", "wait_research",
		"get_steps", "get_citations"} {
		if tl := byName[name]; tl == nil || !tl.Annotations.ReadOnlyHint {
			t.Errorf("%s is missing or not read-only", name)
		}
	}
	for _, name := range []string{"start_research", "answer_research", "decide_plan", "fork_research"} {
		if tl := byName[name]; tl == nil || tl.Annotations.ReadOnlyHint || *tl.Annotations.DestructiveHint {
			t.Errorf("%s is missing, read-only or destructive", name)
		}
	}
	if tl := byName["cancel_research"]; tl == nil || !*tl.Annotations.DestructiveHint || !tl.Annotations.IdempotentHint {
		t.Errorf("cancel_research is missing or not destructive and idempotent")
	}
	for _, tl := range byName {
		starts := tl.Name == "start_research" || tl.Name == "fork_research"
		if *tl.Annotations.OpenWorldHint != starts {
			t.Errorf("%s: openWorldHint %v; only the tools that start a research reach the open world", tl.Name, *tl.Annotations.OpenWorldHint)
		}
	}
}

// TestMCPServerHasTheRegistrysTools checks that the server lists exactly
// the tools of the registry, in its order, each with the annotations the
// registry gives it: no tool is added beside it.
func TestMCPServerHasTheRegistrysTools(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cs := connectMCP(t, ctx, "http://127.0.0.1:1", "gb_unused", nil)
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, tl := range listed.Tools {
		got = append(got, tl.Name)
	}
	specs := map[string]*mcp.Tool{}
	for _, tl := range mcpTools(nil) {
		want = append(want, tl.name)
		specs[tl.name] = tl.spec()
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(want) < 13 {
		t.Fatalf("the server lists %v, the registry has %v", got, want)
	}
	for _, tl := range listed.Tools {
		a, b := tl.Annotations, specs[tl.Name].Annotations
		if a.ReadOnlyHint != b.ReadOnlyHint || a.IdempotentHint != b.IdempotentHint ||
			*a.DestructiveHint != *b.DestructiveHint || *a.OpenWorldHint != *b.OpenWorldHint || tl.Title != b.Title {
			t.Errorf("%s is listed with %+v, the registry says %+v", tl.Name, a, b)
		}
	}
}

// TestREADMEListsTheMCPTools reads the table of tools in the README's MCP
// section and compares it with the registry both ways: every tool there is
// registered with the hints the table gives, and every registered tool is
// there.
func TestREADMEListsTheMCPTools(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n### MCP server\n")
	if start < 0 {
		t.Fatal("the README has no MCP server section")
	}
	section := doc[start+1:]
	if end := strings.Index(section[4:], "\n#"); end >= 0 {
		section = section[:end+4]
	}
	listed := map[string]string{} // tool: its hints as the table says them
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, dup := listed[name]; dup {
			t.Errorf("the README lists %s twice", name)
		}
		listed[name] = strings.TrimSpace(cells[3])
	}
	registered := map[string]string{}
	for _, tl := range mcpTools(nil) {
		registered[tl.name] = hintsWords(tl.spec().Annotations)
	}
	for name, hints := range listed {
		if want, ok := registered[name]; !ok {
			t.Errorf("the README lists %s, which the server does not have", name)
		} else if hints != want {
			t.Errorf("the README gives %s the hints %q; it has %q", name, hints, want)
		}
	}
	for name := range registered {
		if _, ok := listed[name]; !ok {
			t.Errorf("the README's MCP tools leave out %s", name)
		}
	}
}

// hintsWords says a tool's annotations in the words of the README's table.
func hintsWords(a *mcp.ToolAnnotations) string {
	var w string
	switch {
	case a.ReadOnlyHint:
		w = "reads"
	case *a.DestructiveHint && a.IdempotentHint:
		w = "cancels"
	case !*a.DestructiveHint:
		w = "changes"
	default:
		w = "destroys"
	}
	if *a.OpenWorldHint {
		w += ", open world"
	}
	return w
}

// TestMCPProgressResourcesAndBoundedPages starts a research with
// sub-agents through the SDK's client asking for progress, and checks the
// progress notifications, the resources of the research and its report,
// and that every paged tool answers well under 20 KB with a way on.
func TestMCPProgressResourcesAndBoundedPages(t *testing.T) {
	t.Parallel()
	s := startCLIStack(t, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var mu sync.Mutex
	var notes []*mcp.ProgressNotificationParams
	cs := connectMCP(t, ctx, s.url, s.key, func(p *mcp.ProgressNotificationParams) {
		mu.Lock()
		defer mu.Unlock()
		notes = append(notes, p)
	})

	params := &mcp.CallToolParams{Name: "start_research", Arguments: map[string]any{
		"topic": "What does sync.Once guarantee? How does context carry deadlines?", "wait_seconds": 100}}
	params.SetProgressToken("research-1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("start_research: %v %s", err, toolText(res))
	}
	done := structured(t, res)
	id := int64(done["id"].(float64))
	if done["ended"] != true || done["status"] != "succeeded" || done["report_resource"] != reportURI(id) {
		t.Fatalf("start_research with wait_seconds answered %v, want the research ended with its report", done)
	}
	mu.Lock()
	got := slices.Clone(notes)
	mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no progress notification while the research worked")
	}
	for i, p := range got {
		if p.ProgressToken != "research-1" || p.Message == "" || (i > 0 && p.Progress <= got[i-1].Progress) {
			t.Errorf("notification %d: %+v (want the call's token, a message and a rising progress)", i, p)
		}
	}
	if last := got[len(got)-1].Progress; last != done["events"].(float64) {
		t.Errorf("the last progress is %v, want the %v events of the tree", last, done["events"])
	}

	checkResources(t, ctx, cs, id)
	checkBoundedPages(t, ctx, cs, id)
}

// checkResources checks the templates, the list and the reads of the
// research and report resources.
func checkResources(t *testing.T, ctx context.Context, cs *mcp.ClientSession, id int64) {
	t.Helper()
	tmpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, rt := range tmpls.ResourceTemplates {
		uris = append(uris, rt.URITemplate)
	}
	if !slices.Contains(uris, "gb://research/{id}") || !slices.Contains(uris, "gb://research/{id}/report") {
		t.Errorf("resource templates %v", uris)
	}
	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	uris = nil
	for _, r := range list.Resources {
		uris = append(uris, r.URI)
	}
	if !slices.Contains(uris, researchURI(id)) || !slices.Contains(uris, reportURI(id)) {
		t.Errorf("resources %v lack the research %d and its report", uris, id)
	}
	report := callTool(t, ctx, cs, "get_research", map[string]any{"id": id})["report"].(string)
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: reportURI(id)})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != report || read.Contents[0].MIMEType != "text/markdown" || report == "" {
		t.Fatalf("reading the report: %v %+v; want the report of get_research", err, read)
	}
	read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: researchURI(id)})
	if err != nil || len(read.Contents) != 1 {
		t.Fatalf("reading the research: %v %+v", err, read)
	}
	var run map[string]any
	if err := json.Unmarshal([]byte(read.Contents[0].Text), &run); err != nil || run["id"] != float64(id) ||
		run["report_resource"] != reportURI(id) || run["report"] != nil {
		t.Errorf("the research resource is %s (%v); want the run without its report, pointing at it", read.Contents[0].Text, err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "gb://research/999999/report"}); err == nil {
		t.Error("reading the report of a run that is not the user's succeeded")
	}
}

// checkBoundedPages checks that the paged tools answer under 20 KB by
// default and page on with their cursors.
func checkBoundedPages(t *testing.T, ctx context.Context, cs *mcp.ClientSession, id int64) {
	t.Helper()
	const most = 20 << 10
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_tree", map[string]any{"id": id}},
		{"get_events", map[string]any{"id": id}},
		{"get_messages", map[string]any{"id": id}},
		{"get_sources", map[string]any{"id": id, "tree": true}},
		{"list_research", map[string]any{}},
		{"wait_research", map[string]any{"id": id, "timeout_seconds": 5}},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", c.tool, err, toolText(res))
		}
		b, _ := json.Marshal(res)
		t.Logf("%s answered %d bytes", c.tool, len(b))
		if len(b) > most {
			t.Errorf("%s answered %d bytes, over %d", c.tool, len(b), most)
		}
	}
	tree := callTool(t, ctx, cs, "get_tree", map[string]any{"id": id, "limit": 1})
	if runs := tree["runs"].([]any); len(runs) != 1 || tree["next_cursor"] != "1" {
		t.Fatalf("get_tree limit 1 answered %d runs, next_cursor %v", len(runs), tree["next_cursor"])
	}
	rest := callTool(t, ctx, cs, "get_tree", map[string]any{"id": id, "cursor": "1"})
	if runs := rest["runs"].([]any); len(runs) < 2 || rest["next_cursor"] != nil || tree["totals"] == nil {
		t.Errorf("the rest of the tree: %v", rest)
	}
	first := callTool(t, ctx, cs, "get_events", map[string]any{"id": id, "limit": 2})
	evs := first["events"].([]any)
	if len(evs) != 2 || first["more"] != true || first["next_after"] != evs[1].(map[string]any)["seq"] {
		t.Fatalf("get_events limit 2 answered %v", first)
	}
	next := callTool(t, ctx, cs, "get_events", map[string]any{"id": id, "after": first["next_after"], "limit": 2})
	if n := next["events"].([]any)[0].(map[string]any)["n"]; n != float64(3) {
		t.Errorf("the next page of events starts at n %v, want 3", n)
	}
	for _, bad := range []map[string]any{{"id": id, "limit": 1000}, {"id": id, "cursor": "x"}} {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_tree", Arguments: bad}); err == nil && !res.IsError {
			t.Errorf("get_tree %v succeeded", bad)
		} else if err == nil && !strings.Contains(toolText(res), "get_tree") {
			t.Errorf("get_tree %v: %s", bad, toolText(res))
		}
	}
}

// structured is a tool result's structured content as a JSON object.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out
}
