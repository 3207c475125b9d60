package nemesis

func processNemeses() []Nemesis { return nil }
