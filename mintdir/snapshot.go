package mintdir

import "context"

// changed tells Config.OnChange that mint id's record changed.
func (d *Directory) changed(id ID) {
	if d.cfg.OnChange != nil {
		d.cfg.OnChange(id.String())
	}
}

// Mints reads every mint (merged records skipped) afresh, unlike List,
// whose cached read must not be kept warm by a background reader.
func (d *Directory) Mints(ctx context.Context) ([]*Mint, error) {
	var all []*Mint
	err := d.each(ctx, func(m *Mint) { all = append(all, m) })
	return all, err
}
