!> flex_endpoint: the flexible side of one rigid-flexible joint -- a grounded_body and what
!> it has exchanged -- in the order of the Python FlexEndpoint
!> (src/rbcosim/cosim/flex_endpoint.py), so that a solver over it follows PROTOCOL.md 7a:
!>   report()            node kinematics (13) and the energy delivered so far (J);
!>   inputs_for_rigid()  the wrench polynomial the rigid side applies over [t, t + H];
!>   finish()            step the body (unless it already did) and commit the step.
!> Wrenches are [force N; moment N m] (6), inertial, on the rigid body at the point;
!> polynomials are coefficient columns (6, m) in tau = time - t_k (s), the wire's
!> [m][6] layout.
module flex_endpoint_mod
  use dense, only: dp
  use grounded_structure, only: grounded_body
  use interface_frame, only: exchange_polynomial
  implicit none
  private
  public :: flex_endpoint

  integer, parameter :: history = 4  ! exchanged wrenches kept

  type :: flex_endpoint
    type(grounded_body) :: body
    character(len=64) :: scheme = "jacobi"
    integer :: extrapolation = 0    ! order of the wrench polynomial (0..2)
    logical :: hand_added_mass = .true.
    real(dp) :: h = 0.0_dp          ! macro step, s
    ! exchanged wrenches (the rigid side's inputs), newest first, and their times (s)
    real(dp) :: times(history) = 0.0_dp, wrenches(6, history) = 0.0_dp
    integer :: count = 0
    ! rigid motions stepped from (19), newest first, and their times (s)
    real(dp) :: motions(19, 2) = 0.0_dp, motion_times(2) = 0.0_dp
    integer :: n_motions = 0
    real(dp) :: energy = 0.0_dp          ! J delivered to the rigid side since t_0
    real(dp) :: pending_power = 0.0_dp   ! W at the start of the step being taken
    logical :: implicit_mass = .false.
    real(dp) :: handed_mass(6, 6) = 0.0_dp ! inertial
  contains
    procedure :: initialize, rigid_input, report, polynomial, inputs_for_rigid, finish
    procedure :: needs_end_motion
    procedure, private :: advance, commit, power
  end type flex_endpoint

contains

  !> Place the body at the rigid point's motion (19) at t (s). With `reference` (3, m):
  !> the structure is unstressed with its boundary there (the grounded_reference), and
  !> the interior keeps that physical state as the boundary moves to the motion.
  !> handover .true.: hand `mass` (6, 6, inertial) to the rigid side (set_added_mass).
  subroutine initialize(self, t, motion, reference, handover, mass)
    class(flex_endpoint), intent(inout) :: self
    real(dp), intent(in) :: t, motion(19)
    real(dp), intent(in), optional :: reference(3)
    logical, intent(out) :: handover
    real(dp), intent(out) :: mass(6, 6)
    real(dp) :: rest(19)
    if (present(reference)) then
      rest = 0.0_dp
      rest(1:3) = reference
      rest(4:7) = motion(4:7)
      call self%body%initialize(t, rest)
      call self%body%set_motion(motion)
    else
      call self%body%initialize(t, motion)
    end if
    handover = .false.
    mass = 0.0_dp
    if (self%hand_added_mass) then
      mass = self%body%added_mass()
      ! as the Python endpoint: nothing to hand over when every entry is negligible
      handover = any(abs(mass) > 1.0e-12_dp * max(1.0_dp, maxval(abs(mass))))
      self%implicit_mass = handover
      if (handover) self%handed_mass = mass
    end if
    self%times(1) = t
    self%wrenches(:, 1) = self%rigid_input()
    self%count = 1
  end subroutine initialize

  !> The wrench (6) the rigid side takes now: W, or W + M_a [a; alpha] when the added
  !> mass was handed over (the rigid side then applies -M_a [a_p; alpha_p] itself).
  function rigid_input(self) result(w)
    class(flex_endpoint), intent(in) :: self
    real(dp) :: w(6)
    w = self%body%wrench()
    if (self%implicit_mass) w = w + matmul(self%handed_mass, self%body%frame_accelerations())
  end function rigid_input

  !> The node report for the continuity check: kinematics (13) and the energy (J).
  subroutine report(self, kin, energy)
    class(flex_endpoint), intent(in) :: self
    real(dp), intent(out) :: kin(13), energy
    kin = self%body%node_kinematics()
    energy = self%energy
  end subroutine report

  !> Wrench coefficients (6, m) in tau = time - t over [t, t + H]: through the past
  !> exchanged values (extrapolation), or, with `end` (6), through the end value at
  !> tau = H and past values (interpolation, flexible side first).
  function polynomial(self, t, end) result(c)
    class(flex_endpoint), intent(in) :: self
    real(dp), intent(in) :: t
    real(dp), intent(in), optional :: end(6)
    real(dp), allocatable :: c(:, :)
    real(dp) :: none(6, 0), at_end(1)
    if (present(end)) then
      at_end(1) = self%h
      c = exchange_polynomial(t, self%times, self%wrenches, &
                              min(max(self%extrapolation, 1), self%count), at_end, &
                              reshape(end, [6, 1]))
    else
      c = exchange_polynomial(t, self%times, self%wrenches, &
                              min(self%extrapolation + 1, self%count), [real(dp) ::], none)
    end if
  end function polynomial

  !> .true. when finish() needs the rigid motion at t + H (Gauss-Seidel, rigid side first).
  logical function needs_end_motion(self)
    class(flex_endpoint), intent(in) :: self
    needs_end_motion = self%scheme == "gauss_seidel_rigid_first"
  end function needs_end_motion

  !> What the rigid side applies over [t, t + H] from the rigid motion (19) at t (s): the
  !> wrench polynomial c (6, m) and, for interface-Jacobian coupling, jac (6, 6, 2) =
  !> (dF/dx, dF/dv) with has_jacobian. With the flexible side first the body steps here.
  subroutine inputs_for_rigid(self, t, motion, c, jac, has_jacobian, ok)
    class(flex_endpoint), intent(inout) :: self
    real(dp), intent(in) :: t, motion(19)
    real(dp), allocatable, intent(out) :: c(:, :)
    real(dp), intent(out) :: jac(6, 6, 2)
    logical, intent(out) :: has_jacobian, ok
    has_jacobian = .false.
    jac = 0.0_dp
    ok = .true.
    select case (trim(self%scheme))
    case ("gauss_seidel_flex_first")
      call self%advance(t, motion, ok=ok)
      if (.not. ok) return
      c = self%polynomial(t, self%rigid_input())
    case ("interface_jacobian")
      ! linearise about the rigid side's state at t: the newest value is the wrench there
      call self%body%set_motion(motion)
      self%times(1) = t
      self%wrenches(:, 1) = self%rigid_input()
      c = self%polynomial(t)
      call self%body%interface_jacobian(jac(:, :, 1), jac(:, :, 2))
      has_jacobian = .true.
    case default
      c = self%polynomial(t)
    end select
  end subroutine inputs_for_rigid

  !> Complete the macro step started by inputs_for_rigid: step the body from the rigid
  !> motion (19) at t (and, rigid side first, end_motion at end_time), then commit.
  subroutine finish(self, t, motion, end_motion, end_time, ok)
    class(flex_endpoint), intent(inout) :: self
    real(dp), intent(in) :: t, motion(19)
    real(dp), intent(in), optional :: end_motion(19), end_time
    logical, intent(out) :: ok
    ok = .true.
    select case (trim(self%scheme))
    case ("gauss_seidel_rigid_first")
      if (.not. (present(end_motion) .and. present(end_time))) &
        error stop "gauss_seidel_rigid_first: the rigid motion at t + H is needed"
      call self%advance(t, motion, end_motion, end_time, ok)
    case ("gauss_seidel_flex_first")
      ! stepped in inputs_for_rigid
    case default
      call self%advance(t, motion, ok=ok)
    end select
    if (ok) call self%commit(t, motion)
  end subroutine finish

  !> Step the body over [t, t + H]; the accelerations through the motion at t and the
  !> past motions (extrapolation order), or the future motion and the newest past one.
  subroutine advance(self, t, motion, future, future_time, ok)
    class(flex_endpoint), intent(inout) :: self
    real(dp), intent(in) :: t, motion(19)
    real(dp), intent(in), optional :: future(19), future_time
    logical, intent(out) :: ok
    real(dp) :: past(19, 2), taus(2)
    integer :: m
    self%pending_power = self%power()
    past = 0.0_dp
    taus = 0.0_dp
    m = min(self%extrapolation, self%n_motions)
    past(:, 1:m) = self%motions(:, 1:m)
    taus(1:m) = self%motion_times(1:m) - t
    if (present(future)) then
      m = min(m, 1)
      past(:, 2) = past(:, 1)
      taus(2) = taus(1)
      past(:, 1) = future
      taus(1) = future_time - t
      m = m + 1
    end if
    call self%body%step(t, self%h, motion, taus(1:m), past(:, 1:m), ok)
  end subroutine advance

  !> Accept the step taken from `motion` at t: trapezoidal power integral, the new
  !> wrench and motion in the histories.
  subroutine commit(self, t, motion)
    class(flex_endpoint), intent(inout) :: self
    real(dp), intent(in) :: t, motion(19)
    self%energy = self%energy + 0.5_dp * self%h * (self%pending_power + self%power())
    self%times(2:) = self%times(:history - 1)
    self%wrenches(:, 2:) = self%wrenches(:, :history - 1)
    self%times(1) = self%body%t
    self%wrenches(:, 1) = self%rigid_input()
    self%count = min(self%count + 1, history)
    self%motions(:, 2) = self%motions(:, 1)
    self%motion_times(2) = self%motion_times(1)
    self%motions(:, 1) = motion
    self%motion_times(1) = t
    self%n_motions = min(self%n_motions + 1, 2)
  end subroutine commit

  !> Power (W) the body's wrench delivers to the rigid side at the joint node now.
  real(dp) function power(self)
    class(flex_endpoint), intent(in) :: self
    real(dp) :: kin(13)
    kin = self%body%node_kinematics()
    power = dot_product(self%body%wrench(), kin(8:13))
  end function power

end module flex_endpoint_mod
