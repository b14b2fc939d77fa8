package timezone

// PopTzOffset extracts timezone data from str then return the
// str with the timezone code removed.
func PopTzOffset(str string) (string, OffsetData) {
	tz := tables()
	if tz.rxSearchIgnoreCase.MatchString(str) {
		for _, offsetData := range tz.offsets {
			idxs := offsetData.Regex.FindStringIndex(str)
			if len(idxs) == 0 {
				continue
			}

			str = str[:idxs[0]+1] + str[idxs[1]:]
			return str, offsetData
		}
	}

	return str, OffsetData{}
}

// WordIsTz check if the specified word is a timezone code.
func WordIsTz(word string) bool {
	return tables().rxSearch.MatchString(word)
}
