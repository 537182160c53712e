module github.com/mcpgate/mcpgate

go 1.26.8
