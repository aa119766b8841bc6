// Package plankit is the planning kit for cache policies: the pieces every
// replacement policy needs around its own order, public so that a policy
// outside flowrun is written with the same parts as the built-in ones.
//
//   - Guard serialises Configure and Plan and checks and maps each request
//     with cache.PlanRequest.View before the policy touches its state,
//     and fills each table's distinct-row counts from the hit bytes when
//     the policy leaves them 0; Decode, HostOptions, PerTable and Info are
//     what Configure and Info do around it.
//   - TwoPass plans one batch over per-table Slots: hits first (so that no
//     miss of the batch evicts a row the batch uses), then misses in request
//     order, free slots before victims, a bypass (slot -1) when every slot
//     holds a row of the batch. A policy supplies only its Table: which slot
//     to evict and what a hit or an insert records.
//   - SlotHeap is an indexed min-heap over one table's slots, for policies
//     that pick the victim by a key (least recently or frequently used,
//     farthest next use).
//
// It imports only sdk/ and the standard library, and never framework/.
package plankit
