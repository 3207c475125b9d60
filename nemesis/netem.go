package nemesis

func netemNemeses() []Nemesis { return nil }
