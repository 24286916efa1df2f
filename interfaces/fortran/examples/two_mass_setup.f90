!> two_mass_setup: the flexible side of the two-mass oscillator
!> (scenarios/two_mass_oscillator_mtx.toml, [flex_bodies.structure] and
!> [couplings.coupling]): M, K, C from Matrix Market files, one boundary DOF (x), the
!> structure unstressed with the interface at the origin.
module two_mass_setup
  use dense, only: dp
  use matrix_market, only: read_matrix_market
  use flex_endpoint_mod, only: flex_endpoint
  implicit none
  private
  public :: load_structure, grounded_reference

  integer, parameter :: boundary_components(1) = [1]  ! boundary_dofs = ["x"]
  real(dp), parameter :: grounded_reference(3) = [0.0_dp, 0.0_dp, 0.0_dp]  ! m

contains

  !> Read DATA_DIR/{m,k,c}.mtx into ep's body, with the coupling settings.
  subroutine load_structure(data_dir, scheme, extrapolation, micro_steps, macro_step, &
                            added_mass, ep, ok, message)
    character(len=*), intent(in) :: data_dir, scheme
    integer, intent(in) :: extrapolation, micro_steps
    real(dp), intent(in) :: macro_step
    logical, intent(in) :: added_mass
    type(flex_endpoint), intent(out) :: ep
    logical, intent(out) :: ok
    character(len=:), allocatable, intent(out) :: message
    real(dp), allocatable :: m(:, :), k(:, :), c(:, :)
    call read_matrix_market(data_dir // "/m.mtx", m, ok, message)
    if (ok) call read_matrix_market(data_dir // "/k.mtx", k, ok, message)
    if (ok) call read_matrix_market(data_dir // "/c.mtx", c, ok, message)
    if (.not. ok) return
    if (any(shape(k) /= shape(m)) .or. any(shape(c) /= shape(m)) .or. &
        size(m, 1) /= size(m, 2) .or. size(m, 1) < size(boundary_components)) then
      ok = .false.
      message = data_dir // ": M, K and C must be square and of one size"
      return
    end if
    call ep%body%setup(m, k, c, boundary_components, micro_steps, ok)
    if (.not. ok) then
      message = data_dir // "/m.mtx: the interior mass block is singular"
      return
    end if
    ep%scheme = scheme
    ep%extrapolation = extrapolation
    ep%h = macro_step
    ep%hand_added_mass = added_mass
  end subroutine load_structure

end module two_mass_setup
