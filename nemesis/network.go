package nemesis

func networkNemeses() []Nemesis { return nil }
