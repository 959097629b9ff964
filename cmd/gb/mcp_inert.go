package main

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gbresearch/gb/infra/inert"
)

// inertResults is the MCP server's middleware that makes what its results
// show as text inert (inert.Text): the text content of tool results (the
// API's JSON answers, errors too) and their structured content, the text
// of resources read and the names and titles of resources listed. A
// report, a step, a message or an agent's name then reaches an MCP client
// with no control character that could drive the terminal it is shown
// on; JSON stays JSON, as only characters inside its strings change.
func inertResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		switch r := res.(type) {
		case *mcp.CallToolResult:
			for _, c := range r.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					t.Text = inert.Text(t.Text)
				}
			}
			if raw, ok := r.StructuredContent.(json.RawMessage); ok {
				r.StructuredContent = json.RawMessage(inert.Text(string(raw)))
			}
		case *mcp.ReadResourceResult:
			for _, c := range r.Contents {
				c.Text = inert.Text(c.Text)
			}
		case *mcp.ListResourcesResult:
			for _, x := range r.Resources {
				x.Name, x.Title, x.Description = inert.Text(x.Name), inert.Text(x.Title), inert.Text(x.Description)
			}
		}
		return res, err
	}
}
