package run

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// WriteTable renders the plain layout every command and benchmark has printed since the first
// release: no outer border, columns separated by spaces, a dashed line under the header, every
// cell left-aligned and unwrapped, headers as given (tablewriter v1's defaults would centre,
// upper-case and box them).
func WriteTable(w io.Writer, header []string, rows [][]string) {
	symbols := tw.NewSymbolCustom("plan").
		WithRow("-").WithColumn(" ").WithCenter(" ").
		WithMidLeft("-").WithMidRight("-").
		WithHeaderLeft("-").WithHeaderMid(" ").WithHeaderRight("-")
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.Border{Left: tw.On, Right: tw.On, Top: tw.Off, Bottom: tw.Off},
			Symbols: symbols,
			Settings: tw.Settings{
				Lines:      tw.Lines{ShowHeaderLine: tw.On},
				Separators: tw.Separators{BetweenColumns: tw.On, BetweenRows: tw.Off},
			},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.Header(header)
	// Bulk and Render only fail on a row of an unsupported type or a writer error; a table on a
	// closed terminal has nowhere to report either.
	_ = t.Bulk(rows)
	_ = t.Render()
}
