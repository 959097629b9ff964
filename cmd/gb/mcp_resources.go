package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gbresearch/gb/jobs"
)

// The MCP resources: a research (its run as JSON, report left out) and its
// report (Markdown), read through the API under the key's user.
const (
	researchURIPrefix   = "gb://research/"
	researchURITemplate = researchURIPrefix + "{id}"
	reportURITemplate   = researchURIPrefix + "{id}/report"
	// mcpResourcesPage is how many runs a page of resources/list holds.
	mcpResourcesPage = 20
)

func researchURI(id int64) string { return researchURIPrefix + strconv.FormatInt(id, 10) }
func reportURI(id int64) string   { return researchURI(id) + "/report" }

// addResources adds the research and report resource templates, and lists
// the user's recent runs as resources.
func addResources(s *mcp.Server, c *apiClient) {
	read := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return readResource(ctx, c, req.Params.URI)
	}
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "research", Title: "A research",
		URITemplate: researchURITemplate, MIMEType: "application/json",
		Description: "A run: its status, state, usage, states, sub-agents and tree totals (its report is the report resource)."}, read)
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "report", Title: "The report of a research",
		URITemplate: reportURITemplate, MIMEType: "text/markdown",
		Description: "The Markdown report of a research with its numbered sources, once it has succeeded."}, read)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.ListResourcesRequest); ok && method == "resources/list" {
				cursor := ""
				if r.Params != nil {
					cursor = r.Params.Cursor
				}
				return listResources(ctx, c, cursor)
			}
			return next(ctx, method, req)
		}
	})
}

// listResources lists the user's recent runs, newest first, a page at a
// time: each run, and the report of each that succeeded.
func listResources(ctx context.Context, c *apiClient, cursor string) (*mcp.ListResourcesResult, error) {
	q := url.Values{"limit": {strconv.Itoa(mcpResourcesPage)}}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var page listPage
	if err := c.do(ctx, "GET", "/v1/gb/research?"+q.Encode(), nil, &page); err != nil {
		return nil, fmt.Errorf("listing your runs: %w", err)
	}
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}, NextCursor: page.NextCursor}
	for _, r := range page.Runs {
		title := fmt.Sprintf("%s (%s)", cut(oneLine(r.Topic), 80), r.Status)
		if r.ParentID != nil {
			title = fmt.Sprintf("%s of run %d (%s)", agentName(&r), *r.ParentID, r.Status)
		}
		res.Resources = append(res.Resources, &mcp.Resource{URI: researchURI(r.ID), Name: fmt.Sprintf("research-%d", r.ID),
			Title: title, MIMEType: "application/json"})
		if r.Status == jobs.StatusSucceeded {
			res.Resources = append(res.Resources, &mcp.Resource{URI: reportURI(r.ID), Name: fmt.Sprintf("report-%d", r.ID),
				Title: "Report: " + cut(oneLine(r.Topic), 80), MIMEType: "text/markdown"})
		}
	}
	return res, nil
}

// readResource reads a research or its report through the API.
func readResource(ctx context.Context, c *apiClient, uri string) (*mcp.ReadResourceResult, error) {
	rest, ok := strings.CutPrefix(uri, researchURIPrefix)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	idText, report := strings.CutSuffix(rest, "/report")
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id <= 0 {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var d jobs.RunDetails
	if err := c.do(ctx, "GET", fmt.Sprintf("/v1/gb/research/%d", id), nil, &d); err != nil {
		if ae := (*apiError)(nil); errors.As(err, &ae) && ae.Status == 404 {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, fmt.Errorf("reading %s: %w", uri, err)
	}
	if report {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown",
			Text: reportText(d.Run)}}}, nil
	}
	reportText := d.Report
	d.Report = ""
	b, err := json.Marshal(struct {
		*jobs.RunDetails
		Report         *string `json:"report,omitempty"`
		ReportResource string  `json:"report_resource"`
		ReportChars    int     `json:"report_chars"`
	}{RunDetails: &d, ReportResource: reportURI(id), ReportChars: len([]rune(reportText))})
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", uri, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}}, nil
}

// reportText is a run's report, or a line that says why there is none yet.
func reportText(r *jobs.Run) string {
	switch {
	case r.Report != "":
		return r.Report
	case r.Ended():
		return fmt.Sprintf("Research %d ended %s without a report: %s", r.ID, r.Status, r.Error)
	}
	return fmt.Sprintf("Research %d has no report yet: it is %s (%s). The report appears when it succeeds.", r.ID, r.Status, r.State)
}
