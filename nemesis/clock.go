package nemesis

func clockNemeses() []Nemesis { return nil }
