package management

// OrderBy selects the column a list is ordered by.
type OrderBy string

// OrderByUpdatedAt orders a list by last update time. The zero OrderBy
// orders by creation time.
const OrderByUpdatedAt OrderBy = "updatedAt"

// Direction is the direction of a list's order.
type Direction string

// The list directions. The zero Direction is the service's default, descending.
const (
	Ascending  Direction = "asc"
	Descending Direction = "desc"
)

// ListOptions selects the order of a list, or the page to resume from.
// A nil *ListOptions lists from the first page in the default order
// (creation time, descending).
type ListOptions struct {
	OrderBy   OrderBy   // "" (creation time) or OrderByUpdatedAt
	Direction Direction // "" (descending), Ascending or Descending
	// NextPage resumes from a link returned in Page.NextPage. The link
	// carries its own order, so it cannot be combined with OrderBy or Direction.
	NextPage string
}

// Page is one page of a list.
type Page[T any] struct {
	Items []T
	// NextPage is the link to the next page, "" on the last page. Pass it
	// as ListOptions.NextPage to continue.
	NextPage string
}
