package layering

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// A comment that cites a section must still say the rule it follows: the sources behind
// "QLM §6" or "LLM engine digest §4" may not be at a reader's hand (the digests live beside
// the repository), so the citation says where to check and the words say what. minRuleWords
// is the fewest words, citations taken out, that a citing comment group keeps.
const minRuleWords = 6

var (
	// citation is one reference: an optional source name and the section, or a
	// parenthesised group holding one ("(QLM §7, Eq. 2)").
	citation = regexp.MustCompile(`\([^()]*§[^()]*\)|[\p{L}0-9'./-]*\s*§\s*[0-9A-Za-z.]+([–,-]\s*§?[0-9A-Za-z.]+)*`)
	// sourceName is the word right before a "§": a name REFERENCES.md must resolve.
	sourceName = regexp.MustCompile(`([\p{L}][\p{L}0-9'-]*(\.md)?)\s*§`)
	ruleWord   = regexp.MustCompile(`\p{L}{2,}`)
)

// connectives precede a section number that continues an earlier citation ("§2 and §4").
var connectives = map[string]bool{"and": true, "of": true, "in": true, "or": true, "to": true, "applies": true, "facts": true, "see": true}

// citingComment is one comment group that cites a section, as found in a production file.
type citingComment struct {
	pos  string
	text string
}

// citingComments returns every comment group under root that holds a "§".
func citingComments(t *testing.T, root string) []citingComment {
	t.Helper()
	var out []citingComment
	fset := token.NewFileSet()
	err := walkSources(root, func(rel, path string, src []byte) error {
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			if text := cg.Text(); strings.Contains(text, "§") {
				out = append(out, citingComment{pos: fmt.Sprintf("%s:%d", rel, fset.Position(cg.Pos()).Line), text: text})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ruleWords counts the words a comment keeps once its citations are taken out.
func ruleWords(text string) int {
	return len(ruleWord.FindAllString(citation.ReplaceAllString(text, " "), -1))
}

// unresolvedNames returns the source names text cites that refs does not mention.
func unresolvedNames(text, refs string) []string {
	var bad []string
	lower := strings.ToLower(refs)
	for _, m := range sourceName.FindAllStringSubmatch(text, -1) {
		name := strings.TrimSuffix(m[1], "'s")
		if connectives[strings.ToLower(name)] || !unicode.IsLetter([]rune(name)[0]) {
			continue
		}
		if !strings.Contains(lower, strings.ToLower(name)) {
			bad = append(bad, name)
		}
	}
	return bad
}

func TestCitationsStateTheRule(t *testing.T) {
	refs, err := os.ReadFile("../../REFERENCES.md")
	if err != nil {
		t.Fatalf("REFERENCES.md resolves the names comments cite: %v", err)
	}
	comments := citingComments(t, "../..")
	if len(comments) < 100 {
		t.Fatalf("found %d citing comments; the walk is broken (hundreds are expected)", len(comments))
	}
	for _, c := range comments {
		if n := ruleWords(c.text); n < minRuleWords {
			t.Errorf("%s: the comment cites a section but says only %d words of its own; state the rule, then cite:\n\t%s", c.pos, n, strings.TrimSpace(c.text))
		}
		for _, name := range unresolvedNames(c.text, string(refs)) {
			t.Errorf("%s: cites %q, which REFERENCES.md does not name", c.pos, name)
		}
	}
}

// TestCitationRulesCatch checks the two rules on comments that must fail and pass them.
func TestCitationRulesCatch(t *testing.T) {
	refs := "QLM digest"
	cases := []struct {
		text      string
		wordsOK   bool
		unknownOK bool
	}{
		{"See QLM §6.", false, true},
		{"Online defaults (CascadeServe §5).", false, false},
		{"The estimate adds the queue ahead of a request to its own service time (QLM §6, Eq. 4).", true, true},
		{"Preemption recomputes the victim's prompt when swap is off (digest §2.4 and §4).", true, true},
		{"Pools are sized by the rates each stage must carry at its SLO share (Foo §3).", true, false},
	}
	for _, c := range cases {
		if got := ruleWords(c.text) >= minRuleWords; got != c.wordsOK {
			t.Errorf("%q: rule words %d, want ok=%v", c.text, ruleWords(c.text), c.wordsOK)
		}
		if got := len(unresolvedNames(c.text, refs)) == 0; got != c.unknownOK {
			t.Errorf("%q: unresolved %v, want none=%v", c.text, unresolvedNames(c.text, refs), c.unknownOK)
		}
	}
}
