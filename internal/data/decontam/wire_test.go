package decontam

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestIndexRoundTrip: a decoded index answers every check as the built one.
func TestIndexRoundTrip(t *testing.T) {
	x := defaultIndex(t)
	b, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	y, err := UnmarshalIndex(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x.Stats(), y.Stats()) || !reflect.DeepEqual(x.Config(), y.Config()) {
		t.Fatalf("stats or config differ: %+v vs %+v", x.Stats(), y.Stats())
	}
	items := gsmTest(t)
	paras := wikiParas(t, 20)
	hits := 0
	for k := 0; k < 20; k++ {
		doc := paras[k] + "\n" + items[k*7].question + "\n" + paras[(k+1)%20]
		mx, my := x.Check(fmt.Sprint(k), doc), y.Check(fmt.Sprint(k), doc)
		if !reflect.DeepEqual(mx, my) {
			t.Errorf("doc %d: %+v vs %+v", k, mx, my)
		}
		if mx.Hit {
			hits++
			if x.Cut(doc, mx) != y.Cut(doc, my) {
				t.Errorf("doc %d: cuts differ", k)
			}
		}
	}
	if hits == 0 {
		t.Fatal("no planted question caught: the comparison checks nothing")
	}
	for _, bad := range [][]byte{nil, []byte("junk"), b[:len(b)/2]} {
		if _, err := UnmarshalIndex(bad); err == nil || !strings.Contains(err.Error(), "decode index") {
			t.Errorf("%d bytes of bad input: %v", len(bad), err)
		}
	}
}
