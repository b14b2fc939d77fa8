package timezone

import "testing"

// TestPopTzOffsetLazy checks the tables built on first use (kestrel's
// change, third_party/README.md) find a timezone, strip it, and leave a
// string without one alone.
func TestPopTzOffsetLazy(t *testing.T) {
	cases := []struct {
		in, out, name string
		offset        int
	}{
		{"12 Jan 2020 10:00 PST", "12 Jan 2020 10:00 ", "PST", -8 * 3600},
		{"12 Jan 2020 10:00 UTC", "12 Jan 2020 10:00 ", "UTC", 0},
		{"12 Jan 2020 10:00", "12 Jan 2020 10:00", "", 0},
	}
	for _, c := range cases {
		got, tz := PopTzOffset(c.in)
		if got != c.out || tz.Name != c.name || tz.Offset != c.offset {
			t.Errorf("PopTzOffset(%q) = %q, {%q, %d}; want %q, {%q, %d}", c.in, got, tz.Name, tz.Offset, c.out, c.name, c.offset)
		}
	}
	if !WordIsTz("CET") || WordIsTz("hello") {
		t.Errorf("WordIsTz: CET %v (want true), hello %v (want false)", WordIsTz("CET"), WordIsTz("hello"))
	}
}
