package cli

import (
	"encoding/json"
	"io"

	"github.com/olekukonko/tablewriter"
)

// JSONOutput reports whether --output json was asked for.
func (a *App) JSONOutput() bool { return a.Output == "json" }

// WriteJSON prints v as indented JSON.
func (a *App) WriteJSON(v any) error {
	enc := json.NewEncoder(a.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Table prints rows under a header in a plain, CI-log-friendly table.
func (a *App) Table(header []string, rows [][]string) {
	writeTable(a.Out, header, rows)
}

func writeTable(w io.Writer, header []string, rows [][]string) {
	t := tablewriter.NewWriter(w)
	t.SetHeader(header)
	t.SetAutoFormatHeaders(false)
	t.SetAutoWrapText(false)
	t.SetBorder(false)
	t.SetHeaderLine(true)
	t.SetColumnSeparator(" ")
	t.SetCenterSeparator(" ")
	t.SetRowSeparator("-")
	t.SetAlignment(tablewriter.ALIGN_LEFT)
	t.SetHeaderAlignment(tablewriter.ALIGN_LEFT)
	t.AppendBulk(rows)
	t.Render()
}
